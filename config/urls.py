"""The site's URLs: the app's pages and API, the admin and the login pages."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("procurement.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
]

# Database unavailable (pool timeout, too many clients) is a 503 with Retry-After.
handler500 = "procurement.views.errors.server_error"
