from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from procurement.roles import ROLES
from procurement.services.accounts import user_create


class Command(BaseCommand):
    help = "Create a user with a role (analyst, ops or admin), or change an existing user's role."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", help="default: a generated one, printed once")
        parser.add_argument("--email", default="")

    def handle(self, *args, username, role, password, email, **options) -> None:
        try:
            user, new_password = user_create(
                username=username, role=role, password=password, email=email
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        line = f"User '{user.username}' has role {role}."
        if new_password and not password:
            line += f" Password: {new_password}"
        self.stdout.write(self.style.SUCCESS(line))
