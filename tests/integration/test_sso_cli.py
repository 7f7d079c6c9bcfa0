"""`r42 sso set|show|off` as an operator runs them (issue 48): the provider's discovery is read before anything is
stored, the secret comes from a file and is never printed, bad input exits non-zero and stores nothing."""

import json
import secrets

import pytest

from r42_app.services.store.sso import SsoStore
from r42_app.services.store.tenants import Tenants
from tests.integration.test_cli_kb import run_cli
from tests.oidc_peer import OidcPeer

pytestmark = pytest.mark.slow  # a CLI process per command


def test_an_operator_connects_shows_and_switches_off_a_tenants_provider(pb_server, admin_pb, seeded, tmp_path):
    slug = "sso-cli-" + secrets.token_hex(3)
    tenant = Tenants(admin_pb).create(slug, "CLI Academie")
    domain = f"{slug}.nl"
    secret_file = tmp_path / "secret"
    with OidcPeer() as peer:
        secret_file.write_text(peer.secret + "\n")
        base = ["sso", "set", "--tenant", slug, "--client-id", peer.client_id, "--client-secret-file",
                str(secret_file)]

        down = run_cli(pb_server, *base, "--issuer", "http://127.0.0.1:9", "--domains", domain)
        assert down.returncode != 0 and "cannot be reached" in down.stderr
        bad = run_cli(pb_server, *base, "--issuer", peer.issuer, "--domains", "geen domein")
        assert bad.returncode != 0 and "not a domain" in bad.stderr
        missing = run_cli(pb_server, "sso", "set", "--tenant", slug, "--issuer", peer.issuer, "--client-id", "x",
                          "--client-secret-file", str(tmp_path / "nergens"), "--domains", domain)
        assert missing.returncode != 0 and "no file at" in missing.stderr
        assert SsoStore(admin_pb, loopback_ok=True).get(tenant) is None  # nothing stored by any of them

        done = run_cli(pb_server, *base, "--issuer", peer.issuer, "--domains", f"{domain},Extra-{domain}",
                       "--admin-group", "r42-beheer", "--no-passwords")
        assert done.returncode == 0, done.stderr
        assert "passwords are off" in done.stdout and "/auth/oidc/callback" in done.stdout
        assert ("GET", "/.well-known/openid-configuration") in peer.requests

        shown = run_cli(pb_server, "sso", "show", "--tenant", slug, "--json")
        assert json.loads(shown.stdout) | {"redirect_uri": None} == {
            "tenant": slug, "issuer": peer.issuer, "client_id": peer.client_id,
            "domains": [domain, f"extra-{domain}"], "admin_group": "r42-beheer", "passwords": False,
            "redirect_uri": None}
        text = run_cli(pb_server, "sso", "show", "--tenant", slug)
        assert "client secret (set)" in text.stdout
        for output in (done, shown, text):
            assert peer.secret not in output.stdout + output.stderr
        assert SsoStore(admin_pb, loopback_ok=True).secret(tenant.id) == peer.secret  # stored without the file's newline

    off = run_cli(pb_server, "sso", "off", "--tenant", slug)
    assert off.returncode == 0 and "switched off" in off.stdout
    again = run_cli(pb_server, "sso", "off", "--tenant", slug)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert json.loads(run_cli(pb_server, "sso", "show", "--tenant", slug, "--json").stdout) is None
    unknown = run_cli(pb_server, "sso", "show", "--tenant", "bestaat-niet")
    assert unknown.returncode != 0 and "unknown tenant" in unknown.stderr
