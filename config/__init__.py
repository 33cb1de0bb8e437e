"""The project's configuration: settings, URLs, ASGI entry point and WebSocket routes."""
