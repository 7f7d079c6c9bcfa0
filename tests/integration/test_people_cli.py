"""`r42 tenant create --admin-email` and `r42 user invite|list|import|role|deactivate|activate` as an operator runs
them (issue 46): with mail off (the embedded default) every link is printed to hand over; bad input exits 2 and
writes nothing."""

import json
import secrets

import pytest

from r42_app.services.adapters.mailer import Mailer
from r42_app.services.store.people import People
from tests.integration.test_cli_kb import run_cli

pytestmark = pytest.mark.slow  # a CLI process per command


def test_a_new_tenant_gets_its_first_admin_and_people_from_the_command_line(pb_server, admin_pb, seeded, tmp_path):
    slug = "cli-" + secrets.token_hex(3)
    made = run_cli(pb_server, "tenant", "create", "--slug", slug, "--name", "CLI BV", "--admin-email", "Baas@Cli.nl")
    assert made.returncode == 0, made.stderr
    assert "invited baas@cli.nl as its first admin" in made.stdout
    assert "mail is off: hand this link to baas@cli.nl: http://127.0.0.1:" in made.stdout  # R42_PUBLIC_URL unset
    assert "/welkom?token=" in made.stdout

    csv = tmp_path / "klas.csv"
    csv.write_text("email;naam;rol\nanna@cli.nl;Anna;deelnemer\nbob@cli.nl;=1+1;deelnemer\nanna@cli.nl;Anna 2;\n")
    refused = run_cli(pb_server, "user", "import", "--tenant", slug, str(csv))
    assert refused.returncode == 2
    assert f"{csv}:3: bob@cli.nl: a name cannot start with '='" in refused.stderr
    assert f"{csv}:4: anna@cli.nl: anna@cli.nl is on line 2 already" in refused.stderr
    assert "nothing was written" in refused.stderr

    csv.write_text("email;naam;rol\nanna@cli.nl;Anna;deelnemer\nbob@cli.nl;Bob;beheerder\n")
    dry = run_cli(pb_server, "user", "import", "--tenant", slug, "--dry-run", str(csv))
    assert dry.returncode == 0 and "2 new" in dry.stdout and "nothing was written" in dry.stdout
    done = run_cli(pb_server, "user", "import", "--tenant", slug, str(csv))
    assert done.returncode == 0, done.stderr
    links = dict(line.split("\t")[:2] for line in done.stdout.splitlines())
    assert set(links) == {"anna@cli.nl", "bob@cli.nl"} and all("/welkom?token=" in u for u in links.values())

    listed = run_cli(pb_server, "user", "list", "--tenant", slug, "--json")
    people = {p["email"]: p for p in json.loads(listed.stdout)}
    assert {e: (p["role"], p["state"]) for e, p in people.items()} == {
        "baas@cli.nl": ("admin", "invited"), "anna@cli.nl": ("learner", "invited"), "bob@cli.nl": ("admin", "invited")}

    # accept one (as the page does), then change them from the command line
    People(admin_pb, Mailer(), "http://x").redeem(links["anna@cli.nl"].split("token=")[1], "paarse-fiets-op-dinsdag")
    off = run_cli(pb_server, "user", "deactivate", "--tenant", slug, "--email", "anna@cli.nl")
    assert off.returncode == 0 and "every session of theirs ended" in off.stdout
    role = run_cli(pb_server, "user", "role", "--tenant", slug, "--email", "anna@cli.nl", "--role", "superuser")
    assert role.returncode == 2 and "unknown role 'superuser'" in role.stderr
    other = run_cli(pb_server, "user", "invite", "--tenant", slug, "--email", "learner@example.com")
    assert other.returncode == 2 and "belongs to another tenant" in other.stderr
