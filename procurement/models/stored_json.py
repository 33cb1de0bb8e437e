"""How every JSON column is read back: as stored, but never with a lone surrogate."""

from __future__ import annotations

import json
import re
from typing import Any

from procurement.limits import lone_surrogates_replaced

# "\ud800" to "\udfff" as JSON escapes them; a valid pair matches too (and is left alone).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class StoredJSONDecoder(json.JSONDecoder):
    """The decoder of every JSONField: a lone surrogate comes back as U+FFFD.

    The input rules (procurement.limits) keep new ones out, but SQLite stored them inside
    JSON before those rules (PostgreSQL's jsonb never could), and a string that holds one
    fails every response, page, stream and export that carries it (it has no UTF-8 form).
    So nothing stored can make a later read fail. The raw text is searched first: a
    document without a surrogate escape costs one scan and is returned as decoded.
    """

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        document = super().decode(s, *args, **kwargs)
        if _ESCAPED_SURROGATE.search(s):
            return lone_surrogates_replaced(document)
        return document
