"""The demo's stream of memories: JSON lines of `MemoryDocuments` rows (deploy/axon/memory.axon)
for two tenants, written to a folder for `mnemo persist`.

- `acme.jsonl`: Acme Advisory, an agency whose assistant remembers for two end-clients, Northwind
  and Globex, in one corpus: the `tenant_id` column says whose memory a row is.
- `solo.jsonl`: Solo, one person's assistant (one `tenant_id` value for every row).

A few memories tell a story the edge classifier can read (a later memory that *replaces* an earlier
one by title, one that *contradicts* another, one that cites another by title); the rest are meeting
notes that make it a stream. Ids and end-client ids are uuid5s of fixed names, so the output is the
same every run (each run writes them under new tenants). Prints `name=uuid` for each end-client.

    python deploy/demo/memories.py OUT_DIR [--notes N]
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path

NAMESPACE = uuid.UUID("6d6e656d-6f00-4000-8000-00000000de00")
CLIENTS = {
    name: str(uuid.uuid5(NAMESPACE, f"client/{name}")) for name in ("northwind", "globex", "solo")
}

STORIES: dict[str, list[tuple[str, str]]] = {
    "northwind": [
        (
            "Northwind liability cap",
            "The Northwind master services agreement caps our liability at twelve months of fees.",
        ),
        (
            "Northwind amendment 2",
            "Amendment 2 replaces Northwind liability cap: liability is now capped at twenty-four "
            "months of fees, signed by Dana Whitfield.",
        ),
        (
            "Northwind gross negligence",
            "Gross negligence stays outside the cap; see Northwind liability cap.",
        ),
        (
            "Northwind hosting plan",
            "The Northwind hosting plan keeps primaries in Frankfurt and backups in Virginia.",
        ),
        (
            "Northwind data residency",
            "Northwind data must stay in Frankfurt. This contradicts Northwind hosting plan, "
            "which put backups in Virginia.",
        ),
    ],
    "globex": [
        (
            "Globex liability cap",
            "The Globex consulting agreement caps liability at five hundred thousand dollars.",
        ),
        (
            "Globex renewal",
            "Globex renews every March; Hank Scorpio approves the renewal and the Globex "
            "liability cap stays as signed.",
        ),
        (
            "Globex escalation path",
            "Escalations go to Hank Scorpio, then to the Globex board.",
        ),
    ],
    "solo": [
        (
            "Home insurance liability cap",
            "My home insurance caps personal liability at two million euros.",
        ),
        (
            "Home insurance renewal",
            "The insurer replaces Home insurance liability cap at renewal: three million euros from "
            "June.",
        ),
        ("Dentist", "Dentist appointment with Dr Okafor every six months, next in May."),
    ],
}

TOPICS = (
    "pricing",
    "onboarding",
    "security review",
    "invoice dispute",
    "roadmap",
    "support hours",
    "training",
    "audit findings",
)
PEOPLE = ("Ava Lindqvist", "Ben Osei", "Chen Wei", "Dana Whitfield", "Eli Navarro", "Fatima Zahra")


def _rows(client: str, notes: int, rng: random.Random) -> list[dict[str, str]]:
    tenant_id = CLIENTS[client]
    label = client.capitalize()
    rows = [
        {
            "id": str(uuid.uuid5(NAMESPACE, f"{client}/story/{k}")),
            "tenant_id": tenant_id,
            "title": title,
            "body": body,
        }
        for k, (title, body) in enumerate(STORIES[client])
    ]
    for k in range(notes):
        topic = rng.choice(TOPICS)
        person = rng.choice(PEOPLE)
        rows.append(
            {
                "id": str(uuid.uuid5(NAMESPACE, f"{client}/note/{k}")),
                "tenant_id": tenant_id,
                "title": f"{label} {topic} note {k + 1}",
                "body": f"Meeting {k + 1} with {person} about {topic} for {label}: "
                f"{rng.choice(('agreed', 'open question', 'follow up next week', 'decided'))}.",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write acme.jsonl and solo.jsonl into")
    parser.add_argument("--notes", type=int, default=120, help="meeting notes per end-client")
    args = parser.parse_args()
    rng = random.Random(13)
    args.out.mkdir(parents=True, exist_ok=True)
    files = {
        "acme.jsonl": _rows("northwind", args.notes, rng) + _rows("globex", args.notes, rng),
        "solo.jsonl": _rows("solo", args.notes, rng),
    }
    for name, rows in files.items():
        with (args.out / name).open("w", encoding="utf-8") as sink:
            for row in rows:
                sink.write(json.dumps(row) + "\n")
    for name, tenant_id in CLIENTS.items():
        print(f"{name}={tenant_id}")


if __name__ == "__main__":
    main()
