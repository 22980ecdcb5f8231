from django.contrib import admin
from django.urls import path, re_path

from common import views
from learning import api as learning_api
from records.api import experiments, trail, views as api, what_if
from records.console import pages
from superdispatch import relay, scrape

handler400 = "common.errors.json_400"
handler404 = "common.errors.json_404"
handler500 = "common.errors.json_500"

urlpatterns = [
    path("healthz", api.Health.as_view()),
    # Each answer counted by superdispatch.metrics.CountRelayAnswers.
    path("v1/relay/events", relay.RelayEvents.as_view(), name="relay-events"),
    path("v1/boards", api.Boards.as_view()),
    path("v1/boards/<str:board_id>", api.BoardDetail.as_view()),
    path("v1/decisions", api.Decisions.as_view()),
    path("v1/decisions/<str:decision_id>", api.DecisionDetail.as_view()),
    path("v1/suggestions", api.Suggestions.as_view()),
    path("v1/suggestions/<str:suggestion_id>", api.SuggestionDetail.as_view()),
    path("v1/suggestions/<str:suggestion_id>/dismiss", api.SuggestionDismiss.as_view()),
    path("v1/what-if", what_if.WhatIf.as_view()),
    path("v1/experiments", experiments.Experiments.as_view()),
    path("v1/experiments/<str:experiment_id>", experiments.ExperimentDetail.as_view()),
    path("v1/dataset", learning_api.Dataset.as_view()),
    path("v1/models/train", learning_api.Train.as_view()),
    path("v1/models", learning_api.Models.as_view()),
    path("v1/models/<str:model_id>", learning_api.ModelDetail.as_view()),
    path("v1/models/<str:model_id>/shadow-report", learning_api.ShadowReport.as_view()),
    path("v1/audit", trail.Audit.as_view()),
    path("v1/schema", views.Schema.as_view(), name="schema"),
    path("v1/docs", views.Docs.as_view(url_name="schema")),
    path("metrics", scrape.MetricsView.as_view()),
    # The admin's own pages, ahead of its catch-all; admin_view keeps them staff-only.
    path("admin/dashboard/", admin.site.admin_view(pages.dashboard_view), name="sd-dashboard"),
    path("admin/agents/<str:agent_id>/", admin.site.admin_view(pages.agent_view), name="sd-agent"),
    re_path(r"^v1/", views.NoRoute.as_view()),
    path("admin/", admin.site.urls),
]
