"""Admin addresses as the admin itself writes them: it escapes "_" and a few other characters
in a key, so an id like pld_23… must not be pasted into a path by hand."""

from django.contrib.admin.utils import quote
from django.urls import reverse


def change_url(obj) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[quote(obj.pk)])


def change_url_for(app_label: str, model_name: str, pk: str) -> str:
    return reverse(f"admin:{app_label}_{model_name}_change", args=[quote(pk)])
