"""Issue 21: a token that a script could read from localStorage is worth hours, not a sliding week. The app
hands the browser a token that cannot be refreshed and ends R42_SESSION_HOURS after the sign-in, and a
direct sign-in on PocketBase's REST API gets at most 8 hours."""

import base64
import json
import time

import httpx

from r42_app.services.store.auth import SESSION_S, AuthService
from tests.conftest import DEMO_PASSWORD, throwaway_user


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_the_browsers_token_cannot_be_refreshed_and_ends_hours_after_sign_in(pb_server, admin_pb, seeded):
    with throwaway_user(admin_pb, prefix="session") as (email, _row):
        session = AuthService(pb_server.url, pb_server.admin_client()).sign_in(email, DEMO_PASSWORD)
        c = claims(session.token)
        assert c["refreshable"] is False
        assert SESSION_S - 120 <= c["exp"] - time.time() <= SESSION_S + 5
        renewed = httpx.post(f"{pb_server.url}/api/collections/users/auth-refresh",
                             headers={"Authorization": session.token})
        assert renewed.status_code == 403  # never renewed: the session ends with its token


def test_a_session_ends_when_its_time_is_up_however_often_it_is_used(pb_server, admin_pb, seeded):
    with throwaway_user(admin_pb, prefix="session") as (email, _row):
        auth = AuthService(pb_server.url, pb_server.admin_client(), session_s=3)
        session = auth.sign_in(email, DEMO_PASSWORD)
        assert auth.verify(session.token).user.email == email
        time.sleep(1.5)
        assert auth.verify(session.token).user.email == email  # in use ...
        time.sleep(2.5)
        assert auth.verify(session.token) is None  # ... and still over after its 3 seconds
        assert auth.check(session.token) is None


def test_a_direct_sign_in_on_the_rest_api_lives_at_most_eight_hours_and_is_never_renewed(pb_server, admin_pb,
                                                                                          seeded):
    with throwaway_user(admin_pb, prefix="session") as (email, _row):
        token = httpx.post(f"{pb_server.url}/api/collections/users/auth-with-password",
                           json={"identity": email, "password": DEMO_PASSWORD}).json()["token"]
        assert claims(token)["exp"] - time.time() <= 8 * 3600 + 5
        refresh = httpx.post(f"{pb_server.url}/api/collections/users/auth-refresh", headers={"Authorization": token})
        assert refresh.status_code == 403 and "niet verlengd" in refresh.json()["message"]
        me = httpx.get(f"{pb_server.url}/api/collections/users/records/{claims(token)['id']}",
                       headers={"Authorization": token})
        assert me.status_code == 200  # the token itself still works, until its 8 hours are up
