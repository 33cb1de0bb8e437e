"""WebSocket URL routes (consumers are added by the dashboard)."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
