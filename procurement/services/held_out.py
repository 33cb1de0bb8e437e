"""Held-out worlds: a sealed evaluation plays its scenarios' worlds on its seed range
drawn under the server's key, the key that also draws every seat's world. A person may
not choose a seed inside a sealed range (the supplier seat refuses it); a world a
person played in a seat before the range was sealed stays, and the evaluation lists it
as exposed (``Evaluation.exposed``, shown beside its tables).

The seat's check and the sealed evaluation's creation race (two requests at once: each
could read before the other commits). Each runs its check and its write in one
transaction that first takes ``held_out_lock``: on PostgreSQL a transaction-level
advisory lock, held until commit, so the second to come reads the first's committed
row (a seat that came first is listed as exposed; an evaluation that came first makes
the seat refuse). On SQLite every transaction here begins IMMEDIATE (the database's
write lock, config/settings/database.py), so those transactions already run one at a
time and nothing more is taken.
"""

from __future__ import annotations

import zlib

from django.db import connection

HELD_OUT_LOCK = zlib.crc32(b"procurement.held_out_worlds")  # one advisory key, this use only


def held_out_lock() -> None:
    """Take the held-out worlds' lock for the rest of the current transaction (a seat's
    chosen seed checked and stored; a sealed evaluation's exposure read and stored).
    RuntimeError outside a transaction: the lock would end at once."""
    if not connection.in_atomic_block:
        raise RuntimeError("held_out_lock needs a transaction (transaction.atomic)")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [HELD_OUT_LOCK])
