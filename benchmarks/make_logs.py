"""Write ``benchmarks/data/logs.json``: agents' logs of distinct things, in the changes set's
format (``memstream bench changes``), for the question "does memstream keep every record of a
log apart, and still link a real change of one of them?".

Six stores, six languages, each from one template the way an agent logs: a shop's orders
(English), a helpdesk's tickets (German), invoices (French), pallets (Spanish), project notes
without identifiers (English) and dental appointments (Italian). Every record names its own
order, ticket, invoice, pallet, project or patient; a few real changes of one identified thing
are planted among them (labelled ``superseded`` with their successor). Questions ask for one
thing by its identifier or name ("current": its newest version first). Written by the team
for this check only, from templates used nowhere else; no model is trained on it.

    python benchmarks/make_logs.py            # rewrites benchmarks/data/logs.json (seeded)
    memstream bench changes --data benchmarks/data/logs.json --shipped
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2025, 3, 3, 8, 0, tzinfo=UTC)
PEOPLE = ["Ben", "Asha", "Marek", "Lena", "Tomás", "Ines", "Kofi", "Yuki", "Olga", "Rafael",
          "Nora", "Emre", "Sofia", "Jonah", "Priya", "Luca", "Maja", "Theo", "Dalia", "Hugo"]


def _at(n: int, rng: random.Random) -> str:
    return (START + timedelta(hours=5 * n + rng.randint(0, 3))).strftime("%Y-%m-%dT%H:%M:%SZ")


def _store(user: str, lang: str, domain: str, records: list[tuple[str, str]],
           changes: dict[int, str], questions: list[tuple[int, str]],
           rng: random.Random) -> dict[str, object]:
    """``records``: (key, text) in the order logged; ``changes``: record index -> the text of
    its change (logged after every record); ``questions``: (record index, question)."""
    memories: list[dict[str, object]] = []
    for key, text in records:
        memories.append({"id": f"m{len(memories) + 1}", "text": text, "kind": "event",
                         "label": "ok", "key": key})
    successor: dict[int, str] = {}
    for idx, text in changes.items():
        mid = f"m{len(memories) + 1}"
        memories.append({"id": mid, "text": text, "kind": "event", "label": "ok",
                         "key": records[idx][0]})
        memories[idx]["label"] = "superseded"
        memories[idx]["superseded_by"] = mid
        successor[idx] = mid
    for n, m in enumerate(memories):
        m["at"] = _at(n, rng)
        del m["key"]
    qs = [{"type": "current", "question": q,
           "expected": [successor.get(idx, f"m{idx + 1}")]} for idx, q in questions]
    return {"user": user, "lang": lang, "domain": domain, "memories": memories,
            "questions": qs}


def orders(rng: random.Random) -> dict[str, object]:
    towns = ["Bristol", "Leeds", "Bath", "York", "Cardiff", "Derby", "Exeter", "Hull"]
    carriers = ["DPD", "Royal Mail", "Evri", "UPS"]
    records = []
    for n in range(40):
        no = 48210 + n
        records.append((str(no), f"Order #{no} for {rng.choice(PEOPLE)} shipped to "
                        f"{rng.choice(towns)} via {rng.choice(carriers)}, tracking "
                        f"JD{rng.randint(10**9, 10**10 - 1)}."))
    changes = {5: "Order #48215 was redirected at the customer's request: it now goes to "
                  "Exeter, same carrier.",
               17: "Order #48227 came back undeliverable and was refunded in full.",
               31: "Customer cancelled order #48241 before dispatch; the parcel never left."}
    questions = [(n, f"Where was order {48210 + n} shipped?") for n in (2, 10, 22, 35, 39)]
    questions += [(5, "Where is order 48215 going?"), (17, "What happened to order 48227?"),
                  (31, "What is the status of order 48241?")]
    return _store("shop-agent", "en", "online shop orders", records, changes, questions, rng)


def tickets(rng: random.Random) -> dict[str, object]:
    issues = ["Drucker im 2. OG druckt nicht", "VPN bricht ab", "Outlook startet nicht",
              "Monitor flackert", "Passwort abgelaufen", "Laptop sehr langsam",
              "Kein Zugriff auf das Laufwerk P:", "Teams-Ton fehlt"]
    records = []
    for n in range(20):
        no = 3100 + n
        records.append((str(no), f"Ticket T-{no}: {rng.choice(issues)}, gemeldet von "
                        f"{rng.choice(PEOPLE)}, zugewiesen an {rng.choice(PEOPLE)}, "
                        f"Priorität {rng.choice(['niedrig', 'mittel', 'hoch'])}."))
    changes = {7: "T-3107 ist erledigt: Treiber neu installiert, Ticket geschlossen.",
               14: "Ticket T-3114 wurde an den externen Dienstleister übergeben, Priorität "
                   "jetzt hoch."}
    questions = [(n, f"Worum geht es in Ticket T-{3100 + n}?") for n in (1, 4, 11, 19)]
    questions += [(7, "Wie ist der Stand von T-3107?"), (14, "Wer kümmert sich um T-3114?")]
    return _store("helpdesk-agent", "de", "IT tickets", records, changes, questions, rng)


def invoices(rng: random.Random) -> dict[str, object]:
    clients = ["Atelier Morel", "Boulangerie Vasseur", "Cabinet Lemaire", "Garage Pons",
               "Librairie Caron", "Studio Nadal"]
    records = []
    for n in range(20):
        no = f"FA-2025-{30 + n:03d}"
        records.append((no, f"Facture {no} envoyée à {rng.choice(clients)} : "
                        f"{rng.randint(2, 40) * 60} €, échéance le {rng.randint(1, 28)} "
                        f"{rng.choice(['avril', 'mai', 'juin'])}."))
    changes = {4: "La facture FA-2025-034 a été réglée par virement le 2 avril.",
               12: "FA-2025-042 annulée : remplacée par un avoir, le client a rendu la "
                   "commande."}
    questions = [(n, f"À qui a été envoyée la facture FA-2025-{30 + n:03d} ?")
                 for n in (0, 8, 15, 19)]
    questions += [(4, "Où en est la facture FA-2025-034 ?"),
                  (12, "Quel est le statut de FA-2025-042 ?")]
    return _store("compta-agent", "fr", "invoices", records, changes, questions, rng)


def pallets(rng: random.Random) -> dict[str, object]:
    towns = ["Zaragoza", "Huesca", "Teruel", "Lleida", "Logroño", "Soria"]
    firms = ["Transportes Vidal", "Logística Ebro", "Rutas Ancla"]
    records = []
    for n in range(20):
        no = 88120 + n
        records.append((str(no), f"Palé {no} cargado en el camión de {rng.choice(firms)} con "
                        f"destino {rng.choice(towns)}, {rng.randint(20, 90) * 10} kg."))
    changes = {3: "El palé 88123 se desvió a Soria: el cliente cambió el punto de entrega.",
               16: "Palé 88136 devuelto al almacén, embalaje dañado; no sale hasta el lunes."}
    questions = [(n, f"¿Adónde va el palé {88120 + n}?") for n in (0, 9, 12, 18)]
    questions += [(3, "¿Cuál es el destino del palé 88123?"),
                  (16, "¿Dónde está el palé 88136?")]
    return _store("almacen-agent", "es", "pallets", records, changes, questions, rng)


def projects(rng: random.Random) -> dict[str, object]:
    names = ["Alder", "Birch", "Cedar", "Damson", "Elm", "Fir", "Gorse", "Hazel", "Ivy",
             "Juniper", "Kale", "Larch", "Maple", "Nettle", "Oak", "Poplar", "Quince",
             "Rowan", "Sorrel", "Tamarisk", "Umber", "Vetch", "Willow", "Yarrow", "Zinnia",
             "Aspen", "Bramble", "Clover", "Dogwood", "Elder"]
    stages = ["kickoff done", "design review passed", "waiting on legal", "in user testing",
              "first release shipped", "blocked on the data export"]
    records = []
    for name in names:
        records.append((name, f"Project {name}: {rng.choice(stages)}; budget "
                        f"{rng.randint(2, 30) * 5}k, lead is {rng.choice(PEOPLE)}."))
    changes = {2: "Cedar's lead changed: Maja took over from the previous lead this week.",
               20: "Project Umber was stopped by the board; the budget goes back to the pool."}
    questions = [(n, f"What is the state of project {names[n]}?") for n in (0, 7, 13, 25, 29)]
    questions += [(2, "Who leads project Cedar?"), (20, "Is project Umber still running?")]
    return _store("pm-script", "en", "project notes", records, changes, questions, rng)


def appointments(rng: random.Random) -> dict[str, object]:
    patients = ["Giulia Conti", "Marco Ferri", "Elena Russo", "Paolo Greco", "Sara Bruno",
                "Luca Gallo", "Anna Costa", "Davide Rizzi", "Chiara Lombardi", "Matteo Moretti",
                "Francesca Villa", "Andrea Marino", "Laura Fontana", "Simone Caruso",
                "Irene Leone"]
    care = ["pulizia", "otturazione", "controllo", "estrazione", "sbiancamento"]
    records = []
    for n, who in enumerate(patients):
        records.append((who, f"Appuntamento di {who}: {rng.choice(care)} il {3 + n} giugno "
                        f"alle {rng.choice(['9:00', '10:30', '14:00', '16:30'])} con la "
                        f"dott.ssa {rng.choice(['Ferri', 'Bianchi', 'Sala'])}."))
    changes = {4: "Sara Bruno ha spostato il suo appuntamento al 20 giugno, stessa ora.",
               10: "Francesca Villa ha disdetto l'appuntamento: si è trasferita a Torino."}
    questions = [(n, f"Quando è l'appuntamento di {patients[n]}?") for n in (0, 6, 9, 14)]
    questions += [(4, "Quando viene Sara Bruno?"),
                  (10, "Francesca Villa ha ancora un appuntamento?")]
    return _store("studio-dentistico", "it", "dental appointments", records, changes,
                  questions, rng)


def main() -> None:
    rng = random.Random(20261208)
    stores = [make(rng) for make in (orders, tickets, invoices, pallets, projects,
                                     appointments)]
    out = Path(__file__).parent / "data" / "logs.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"now": "2025-06-30T12:00:00Z", "stores": stores},
                              ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}: {sum(len(s['memories']) for s in stores)} memories, "  # type: ignore[arg-type]
          f"{sum(len(s['questions']) for s in stores)} questions")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
