from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from procurement.api import evaluations, notifications, views

router = DefaultRouter()
router.register("scenarios", views.ScenarioViewSet, basename="scenario")
router.register("presets", views.PresetViewSet, basename="preset")
router.register("policies", views.PolicyConfigViewSet, basename="policy")
router.register("episodes", views.EpisodeViewSet, basename="episode")
router.register("sweeps", views.SweepViewSet, basename="sweep")
router.register("evaluations", evaluations.EvaluationViewSet, basename="evaluation")
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("notifications", notifications.NotificationViewSet, basename="notification")

# The API authenticates itself (401/403 as JSON), so the login-redirect middleware skips it.
api_patterns = [*router.urls, path("schema/", SpectacularAPIView.as_view(), name="schema")]
for pattern in api_patterns:
    pattern.callback = login_not_required(pattern.callback)

# The docs page is a browser page: anonymous visitors are sent to the login form.
urlpatterns = [
    *api_patterns,
    # DRF views opt out of LoginRequiredMiddleware (DRF >= 3.15), so require it here.
    path(
        "docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="schema")),
        name="api-docs",
    ),
]
