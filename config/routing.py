"""WebSocket routes: live streams of an episode, a sweep, a training run, an evaluation,
and the overview."""

from django.urls import path, re_path

from procurement import consumers

websocket_urlpatterns = [
    path("ws/episodes/<int:episode_id>/", consumers.EpisodeConsumer.as_asgi()),
    path("ws/sweeps/<int:sweep_id>/", consumers.SweepConsumer.as_asgi()),
    path("ws/training/<int:run_id>/", consumers.TrainingConsumer.as_asgi()),
    path("ws/evaluations/<int:evaluation_id>/", consumers.EvaluationConsumer.as_asgi()),
    path("ws/overview/", consumers.OverviewConsumer.as_asgi()),
    re_path(r"", consumers.NotFoundConsumer.as_asgi()),  # last: any other path is a 4404
]
