#!/usr/bin/env python
"""Django's command-line utility for Procurement Arena."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    # On the embedded default a command that starts runs (run_sweep) runs their tasks in a
    # thread of its own process; with Celery configured the runner is never used.
    from workers.inprocess import install_local_runner

    install_local_runner()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
