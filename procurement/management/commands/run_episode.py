from django.core.management.base import BaseCommand, CommandError

from negotiation import ScenarioValidationError, format_transcript, list_policies, run_episode
from procurement.management import arguments


class Command(BaseCommand):
    help = "Run one episode in this process and print its transcript and metrics."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--scenario", default="medium_adversarial", help="preset or stored")
        # The human seat is played in the browser or through the API, not in a terminal.
        choices = [p for p in list_policies() if p != "human"]
        parser.add_argument("--policy", default="expert", choices=choices)
        parser.add_argument("--seed", type=arguments.seed, default=0, help="0 to 2**62")
        parser.add_argument(
            "--save", action="store_true", help="also store it as an Episode with decisions"
        )

    def handle(self, *args, scenario, policy, seed, save, **options) -> None:
        config = self._scenario_config(scenario)
        if save:
            self._run_and_store(scenario, policy, seed)
            return
        try:
            result = run_episode(config, policy, seed)
        except ScenarioValidationError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(format_transcript(result))

    def _scenario_config(self, name: str):
        from negotiation import list_presets
        from procurement.models import Scenario

        stored = Scenario.objects.filter(name=name).first()
        if stored is not None:
            return stored.engine_config()
        if name in list_presets():
            return name
        raise CommandError(
            f"Unknown scenario '{name}'. Presets: {', '.join(list_presets())}; "
            "or the name of a stored scenario."
        )

    def _run_and_store(self, scenario_name: str, policy_name: str, seed: int) -> None:
        from procurement.models import PolicyConfig, Scenario
        from procurement.services.episode_runner import episode_run
        from procurement.services.episodes import episode_create
        from procurement.services.scenarios import presets_seed

        presets_seed()
        scenario = Scenario.objects.get(name=scenario_name)
        policy = PolicyConfig.objects.get(name=policy_name)
        episode = episode_create(scenario=scenario, policy=policy, seed=seed, enqueue=False)
        episode = episode_run(episode_id=episode.pk, live_updates=False)
        self.stdout.write(
            f"Stored episode #{episode.pk}: {episode.status}, {episode.steps} decisions, "
            f"score {episode.score:.4f}"
        )
