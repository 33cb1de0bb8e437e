"""Django settings for Procurement Arena (DJANGO_SETTINGS_MODULE=config.settings), one
module per concern; each reads its own variables from the environment."""

from config.settings.api import *  # noqa: F403
from config.settings.base import *  # noqa: F403
from config.settings.celery import *  # noqa: F403
from config.settings.channels import *  # noqa: F403
from config.settings.database import *  # noqa: F403
from config.settings.llm import *  # noqa: F403
from config.settings.security import *  # noqa: F403
from config.settings.shares import *  # noqa: F403
