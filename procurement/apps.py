from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"
    verbose_name = "Procurement Arena"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_create_role_groups, sender=self)


def _create_role_groups(sender, **kwargs) -> None:
    from procurement.services.accounts import ensure_role_groups

    ensure_role_groups()
