"""Tells: a fixed set of noisy signals in [0, 1] on every supplier response.

Each tell = clip(truthful_signal + style_offset + noise). The truthful signal comes from
hidden state (time pressure, financial stress, the supplier's own quarter-end or surplus-stock
pressure, real concession, real scarcity); every
supplier also has a hidden per-tell style offset so no tell maps one-to-one to a persona.
Deceptive suppliers replace some signals with a distorted version, scaled by the
scenario's deception level: they claim competing offers and low stock, project confidence
and hide urgency.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..world.draws import gauss_noise
from ..world.entities import TELL_NAMES
from .field import base_persona

# Persona "demeanour" baselines: (confidence, response_delay, price_rounding, flexibility, warmth)
_DEMEANOUR: dict[str, tuple[float, float, float, float, float]] = {
    "cooperative": (0.5, 0.3, 0.4, 0.65, 0.7),
    "hardball": (0.75, 0.65, 0.65, 0.25, 0.35),
    "deceptive": (0.6, 0.45, 0.55, 0.45, 0.6),
    "distressed": (0.35, 0.25, 0.3, 0.7, 0.5),
}


@dataclass(slots=True, frozen=True)
class TellSignals:
    """The truth behind one supplier response's tells, before style, distortion and noise.

    ``progress`` = t/T of the supplier's own horizon; ``pressure`` its own deadline or
    stock pressure (concession.pressure): urgent, flexible, no scarcity."""

    persona: str
    style: tuple[float, ...]  # the supplier's hidden per-tell offsets
    progress: float
    stress: float
    concession: float
    scarcity: float
    rival_pressure: float
    repeated: bool  # the counter repeats the last one
    pressure: float = 0.0


def make_tells(
    rng: random.Random, signals: TellSignals, *, deception: float, noise: float
) -> dict[str, float]:
    """Return the tell dict: ``deception`` and ``noise`` are the scenario's. A field
    persona shows its base rule persona's demeanour."""
    persona, style = signals.persona, signals.style
    progress, stress, pressure = signals.progress, signals.stress, signals.pressure
    concession, scarcity = signals.concession, signals.scarcity
    rival_pressure, repeated = signals.rival_pressure, signals.repeated
    persona = base_persona(persona)
    conf, delay, rounding, flex, warmth = _DEMEANOUR[persona]
    urgency = 0.45 * progress * progress + 0.3 * stress + 0.35 * pressure
    competing = 0.1 + 0.6 * rival_pressure
    low_stock = scarcity * (1.0 - 0.6 * pressure)
    flex = flex + 0.25 * pressure
    if persona == "deceptive" and deception > 0.0:
        # Distortion: hide urgency, invent competing offers and scarcity, over-project confidence.
        urgency = (1 - deception) * urgency + deception * 0.2
        competing = (1 - deception) * competing + deception * 0.8
        low_stock = (1 - deception) * low_stock + deception * 0.75
        conf = (1 - deception) * conf + deception * 0.8
    base = (
        urgency,
        conf,
        min(1.0, concession * 6.0),
        delay,
        competing,
        low_stock,
        rounding,
        0.85 if repeated else 0.15,
        flex,
        warmth,
    )
    noise_draws = gauss_noise(rng, len(TELL_NAMES), noise)  # = rng.gauss(0.0, noise) each
    tells = {}
    for name, b, s, z in zip(TELL_NAMES, base, style, noise_draws, strict=True):
        x = b + s + z
        tells[name] = 0.0 if x < 0.0 else 1.0 if x > 1.0 else round(x, 3)  # clip to [0, 1]
    return tells
