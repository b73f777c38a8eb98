"""The form (d) memory corpus the process tests apply: a documents store and an edges store under
names of the test's own, so concurrent tests never share a table."""

from __future__ import annotations


def memory_corpus(
    prefix: str,
    corpus: str,
    suffix: str,
    *,
    id_type: str = "Uuid",
    end_clients: bool = True,
    client_type: str = "Uuid",
    adaptive: bool = False,
) -> str:
    """`.axon` text for `<prefix>Docs_<suffix>`, `<prefix>Edges_<suffix>` and `<corpus>_<suffix>`.

    `end_clients` adds a `tenant_id` column of `client_type` to both stores (the end-client a row
    belongs to); `adaptive` declares the corpus `adaptive: true` (navigations reinforce edges).
    """
    client = f"  tenant_id: {client_type} not_null" if end_clients else ""
    memory = "\n    adaptive: true" if adaptive else ""
    docs, edges = f"{prefix}Docs_{suffix}", f"{prefix}Edges_{suffix}"
    return f"""
axonstore {docs} {{
    backend: postgresql
    schema {{ id: {id_type} primary_key{client}  title: Text not_null  body: Text }}
}}
axonstore {edges} {{
    backend: postgresql
    schema {{ from_id: {id_type} not_null  to_id: {id_type} not_null  etype: Text not_null
             weight: Float not_null{client} }}
}}
corpus {corpus}_{suffix} from axonstore {{
    documents: {docs}(id, title, body)
    relations: {edges}(from_id, to_id, etype, weight){memory}
}}
"""
