from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"
    verbose_name = "Procurement Arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from procurement.db_files import restrict_sqlite_files

        post_migrate.connect(_create_role_groups, sender=self)
        connection_created.connect(restrict_sqlite_files)


def _create_role_groups(sender, **kwargs) -> None:
    from procurement.services.accounts import role_groups_ensure

    role_groups_ensure()
