"""Create (once) the embedded default's local admin login and print it."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the local admin user (password kept in DATA_DIR/admin_password) and print it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="where the site runs")

    def handle(self, *args, username: str, url: str, **options) -> None:
        user_model = get_user_model()
        try:  # before the password file is written: a refused name changes nothing
            user_model._meta.get_field(user_model.USERNAME_FIELD).clean(username, None)
        except ValidationError as exc:
            raise CommandError(f"--username: {' '.join(exc.messages)}") from None
        password_file = settings.DATA_DIR / "admin_password"
        if password_file.exists():
            password = password_file.read_text().strip()
        else:
            password = secrets.token_urlsafe(12)
            password_file.write_text(password)
            password_file.chmod(0o600)
        user, created = user_model.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        if created or not user.check_password(password):
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
        self.stdout.write(
            self.style.SUCCESS(
                f"Local admin login: user '{username}' password '{password}' "
                f"at {url.rstrip('/')}/accounts/login/"
            )
        )
