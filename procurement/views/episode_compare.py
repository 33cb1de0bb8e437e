"""Two episodes side by side (/episodes/compare/?a=ID&b=ID)."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from procurement.models import Episode
from procurement.selectors.episode_compare import aligned_steps, metric_rows, score_lines
from procurement.selectors.episode_filters import MAX_BIGINT
from procurement.views.access import role_required
from procurement.views.supplier_seat import seat_checked


class CompareForm(forms.Form):
    a = forms.IntegerField(label="Episode A", min_value=1, max_value=MAX_BIGINT)
    b = forms.IntegerField(label="Episode B", min_value=1, max_value=MAX_BIGINT)

    def clean(self):
        data = super().clean()
        if data.get("a") is not None and data.get("a") == data.get("b"):
            raise forms.ValidationError("Pick two different episodes.")
        return data


@role_required("analyst")
def episode_compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET or None)
    if not form.is_valid():  # nothing asked yet (200) or a bad id (400): the form says
        status = 400 if request.GET else 200
        return render(request, "procurement/episode_compare.html", {"form": form}, status=status)
    a = seat_checked(request, get_object_or_404(Episode, pk=form.cleaned_data["a"]))
    b = seat_checked(request, get_object_or_404(Episode, pk=form.cleaned_data["b"]))
    steps = aligned_steps(a, b)
    context = {
        "form": form,
        "a": a,
        "b": b,
        "metrics": metric_rows(a, b),
        "steps": steps,
        "lines": score_lines(a, b, steps),
    }
    return render(request, "procurement/episode_compare.html", context)
