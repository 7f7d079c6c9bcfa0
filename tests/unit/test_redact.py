"""Issue 21, hole 8: what the launcher logs or raises carries no secret (core/redact.py)."""

import shlex
import string

from hypothesis import given
from hypothesis import strategies as st

from r42_app.core.redact import masked, redacted_url, shown

SECRET = st.text(alphabet=string.ascii_letters + string.digits + string.punctuation + " ", min_size=4, max_size=40)


def test_the_superuser_upsert_is_shown_with_its_password_masked():
    command = ["/venv/bin/pocketbase", "superuser", "upsert", "--dir=/data/pb_data", "--", "superuser@r42.local",
               "eREcrdP6q45krkJmCD2kll9IszHAVtpD"]
    line = shown(command, ("eREcrdP6q45krkJmCD2kll9IszHAVtpD",))
    assert line == "/venv/bin/pocketbase superuser upsert --dir=/data/pb_data -- superuser@r42.local '***'"


def test_url_passwords_are_masked_wherever_they_are():
    assert redacted_url("redis://default:s3cret@127.0.0.1:6390/0") == "redis://default:***@127.0.0.1:6390/0"
    assert redacted_url("redis://:s3cret@127.0.0.1:6390/0") == "redis://:***@127.0.0.1:6390/0"
    assert redacted_url("http://127.0.0.1:8001") == "http://127.0.0.1:8001"  # a port is not a password
    assert masked("Error connecting to redis://default:pw123@h:1/0, retrying") == \
        "Error connecting to redis://default:***@h:1/0, retrying"


@given(SECRET, st.lists(st.text(max_size=20), max_size=4))
def test_a_secret_never_survives_in_a_shown_command_or_a_message(secret, words):
    command = ["tool", *words, secret, f"--password={secret}", f"redis://u:{secret.replace('@', '')}x@h/0"]
    line = shown(command, (secret,))
    assert secret not in line
    assert secret not in masked(f"failed: {' '.join(command)}", (secret,))
    assert len(shlex.split(line)) == len(command)  # still one argument each, as a shell reads it
