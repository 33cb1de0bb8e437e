# Web and CPU-worker image: the same code, the runtime requirements and the CPU torch.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/base.txt -r requirements/ml.txt \
      --extra-index-url https://download.pytorch.org/whl/cpu
COPY . .
# The expert's compiled kernels, cached in the image (negotiation/policies/expert/warm.py).
RUN python -m negotiation.policies.expert.warm
# A throwaway key: settings refuse short ones, and none is baked into the image.
RUN DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
