from django.core.management.base import BaseCommand

from procurement.services.scenarios import presets_seed


class Command(BaseCommand):
    help = "Load the built-in scenarios, the item catalogue and the rule policies (idempotent)."

    def handle(self, *args, **options) -> None:
        counts = presets_seed()
        self.stdout.write(
            self.style.SUCCESS(
                "Presets: {scenarios_created} created, {scenarios_updated} updated; "
                "{templates} catalogue items and {policies} policies added.".format(**counts)
            )
        )
