from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from procurement.roles import ROLES
from procurement.services.accounts import user_create

NO_ROLE = "none"


class Command(BaseCommand):
    help = (
        "Create a user with a role (analyst, ops or admin; none for no role yet), "
        "or change an existing user's role."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=(*ROLES, NO_ROLE))
        parser.add_argument("--password", help="default: a generated one, printed once")
        parser.add_argument("--email", default="")

    def handle(self, *args, username, role, password, email, **options) -> None:
        try:
            user, new_password = user_create(
                username=username,
                role=None if role == NO_ROLE else role,
                password=password,
                email=email,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        held = "no role" if role == NO_ROLE else f"role {role}"
        line = f"User '{user.username}' has {held}."
        if new_password and not password:
            line += f" Password: {new_password}"
        self.stdout.write(self.style.SUCCESS(line))
