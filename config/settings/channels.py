"""The channel layer that carries live events: channels-redis in full mode, in memory on
the embedded default (which is why its tasks run inside the web process)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import REDIS_URL, env

if REDIS_URL:
    # The layer waits for messages with a 5 s blocking pop (BZPOPMIN). redis-py 8 reads
    # with a 5 s socket timeout by default, so an idle WebSocket consumer died with
    # "Timeout reading" after 5 quiet seconds. No read timeout: the pop bounds each wait
    # (a longer read timeout instead left cancelled receives hanging at loop shutdown).
    # core: a sorted set per consumer channel; a group message is written once per member.
    # pubsub: one PUBLISH per group message, fanned out inside each web process.
    CHANNEL_LAYER_BACKENDS = {
        "core": "channels_redis.core.RedisChannelLayer",
        "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
    }
    CHANNEL_LAYER = env.str("CHANNEL_LAYER", default="core")
    if CHANNEL_LAYER not in CHANNEL_LAYER_BACKENDS:
        raise ImproperlyConfigured(f"CHANNEL_LAYER must be one of {sorted(CHANNEL_LAYER_BACKENDS)}")
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": CHANNEL_LAYER_BACKENDS[CHANNEL_LAYER],
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": None,
                        "socket_connect_timeout": 5,
                        # redis-py 8 caps a pool at 100 and raises beyond: 1,000 sockets
                        # connecting at once (bench/live.py) need more group_add slots.
                        "max_connections": env.int("CHANNEL_REDIS_MAX_CONNECTIONS", default=1000),
                    }
                ],
                "prefix": env.str("CHANNEL_PREFIX", default="arena"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
