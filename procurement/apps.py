from pathlib import Path

from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"
    verbose_name = "Procurement Arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from procurement.db_files import restrict_sqlite_files

        _make_data_dirs()
        post_migrate.connect(_create_role_groups, sender=self)
        connection_created.connect(restrict_sqlite_files)


def _make_data_dirs() -> None:
    """DATA_DIR (the embedded default's SQLite file and key live there) and STATIC_ROOT
    inside it (whitenoise warns about a missing root): made once Django is set up, not when
    the settings are imported."""
    from django.conf import settings

    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    Path(settings.DATA_DIR).mkdir(parents=True, exist_ok=True)


def _create_role_groups(sender, **kwargs) -> None:
    from procurement.services.accounts import role_groups_ensure

    role_groups_ensure()
