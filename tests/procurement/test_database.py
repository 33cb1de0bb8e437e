import pytest
from django.db import connection


@pytest.mark.postgres
@pytest.mark.django_db
def test_runs_on_postgresql_through_psycopg3() -> None:
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert "PostgreSQL" in cursor.fetchone()[0]
    import psycopg

    assert connection.connection.__class__.__module__.startswith("psycopg")
    assert psycopg.__version__.startswith("3.")
