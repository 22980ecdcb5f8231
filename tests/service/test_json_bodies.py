"""A JSON body is read as JSON whatever content type it came with.

`curl -d '{"seed":1}'` sends `application/x-www-form-urlencoded`; other clients send
`text/plain` or no content type at all. Each is the same JSON body; a body that is not JSON is
a 400 naming what was wrong, whatever its content type.
"""

import pytest

from learning.models import LearnedModel
from tests.support.learning_factories import trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

FORM = "application/x-www-form-urlencoded"


def _post(api, body, content_type):
    return api.generic("POST", "/v1/models/train", body, content_type=content_type)


@pytest.mark.parametrize(
    "content_type", [FORM, "text/plain", "", "application/json", "application/json; charset=utf-8"]
)
def test_a_json_body_trains_whatever_its_content_type(api, content_type):
    trainable(40)
    response = _post(api, '{"seed":1}', content_type)
    assert response.status_code == 201, response.content
    assert response.json()["model"]["seed"] == 1


def test_an_empty_body_sent_as_a_form_takes_the_defaults(api):
    trainable(40)
    response = _post(api, "", FORM)
    assert response.status_code == 201 and response.json()["model"]["seed"] == 0


@pytest.mark.parametrize("content_type", [FORM, "text/plain", "", "multipart/form-data; boundary=x"])
def test_a_body_that_is_not_json_is_a_400_naming_it_whatever_its_content_type(api, content_type):
    trainable(40)
    response = _post(api, "seed=1", content_type)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "bad-json"
    assert "JSON" in error["message"]
    assert not LearnedModel.objects.exists()


def test_a_json_body_sent_as_a_form_is_checked_field_by_field_as_any_other(api):
    trainable(40)
    response = _post(api, '{"seed":"1"}', FORM)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad-field" and "seed" in response.json()["error"]["message"]
