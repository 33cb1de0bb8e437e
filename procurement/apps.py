from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"
    verbose_name = "Procurement Arena"
    default_auto_field = "django.db.models.BigAutoField"
