"""WebSocket routes: live streams of an episode, a sweep, and the overview."""

from django.urls import path

from procurement import consumers

websocket_urlpatterns = [
    path("ws/episodes/<int:episode_id>/", consumers.EpisodeConsumer.as_asgi()),
    path("ws/sweeps/<int:sweep_id>/", consumers.SweepConsumer.as_asgi()),
    path("ws/overview/", consumers.OverviewConsumer.as_asgi()),
]
