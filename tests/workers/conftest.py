"""Fixtures of the worker tests that start servers of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import _unavailable
from tests.servers import PostgresServer, postgres_bindir


@pytest.fixture(scope="session")
def stack_pg() -> Iterator[PostgresServer]:
    if postgres_bindir() is None:
        _unavailable("needs the PostgreSQL server binaries to start a private server")
    pg = PostgresServer(max_connections=100).start()
    try:
        import psycopg

        with psycopg.connect(pg.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE arena")
        yield pg
    finally:
        pg.close()
