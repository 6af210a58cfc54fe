"""kafka-metadata-shell's ``tree /`` output, parsed, and the same tree drawn from a seglog image
(what the shell prints for each part of ``MetadataImage``), so the two compare as dicts."""

from __future__ import annotations

from seglog_cli.storage.metadata.image import CONFIG_RESOURCE_TYPES, MetadataImage


SHELL_ENTITY = {"client-id": "clientId", "user": "user", "ip": "ip"}  # ClientQuotasImageNode


def parse_tree(text: str) -> dict[str, str | None]:
    """``{"image/topics/byName/orders/0": "PartitionRegistration(...)", ...}``: each node's path
    and its value (None for a directory node)."""
    out: dict[str, str | None] = {}
    stack: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        body = line.strip()
        if body.endswith(":"):
            del stack[depth:]
            stack.append(body[:-1])
            out["/".join(stack)] = None
        else:
            out["/".join(stack[:depth])] = body
    return out


def image_tree(image: MetadataImage) -> dict[str, str | None]:
    """The shell's tree of ``image`` (provenance, local and the SCRAM secrets left out)."""
    out: dict[str, str | None] = {"image": None, "image/acls": None, "image/acls/byId": None,
                                  "image/clientQuotas": None, "image/cluster": None,
                                  "image/cluster/brokers": None, "image/cluster/controllers": None,
                                  "image/configs": None, "image/delegationToken": None, "image/features": None,
                                  "image/producerIds": None, "image/scram": None, "image/topics": None,
                                  "image/topics/byId": None, "image/topics/byName": None}
    for entity, quotas in image.client_quotas.items():
        node = "image/clientQuotas/" + "_".join(f"{SHELL_ENTITY.get(kind, kind)}({name or ''})"
                                                for kind, name in entity)
        out[node] = None
        for key, value in quotas.items():
            out[f"{node}/{key}"] = repr(float(value))
    for broker in image.brokers.values():
        out[f"image/cluster/brokers/{broker.id}"] = broker.kafka_text()
    for controller in image.controllers.values():
        out[f"image/cluster/controllers/{controller.id}"] = controller.kafka_text()
    for (kind, name), values in image.configs.items():
        node = "image/configs/" + CONFIG_RESOURCE_TYPES[kind] + (f":{name}" if name else "")
        out[node] = None
        for key, value in values.items():
            out[f"{node}/{key}"] = value
    for name, level in image.features.items():
        if name == "metadata.version":
            out["image/features/metadataVersion"] = f"Optional[{image.metadata_version}]"
        else:
            out[f"image/features/finalized_{name}"] = str(level)
    if image.next_producer_id >= 0:
        out["image/producerIds/nextProducerId"] = str(image.next_producer_id)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        out[f"image/scram/{mechanism}"] = None
    for user, mechanisms in image.scram.items():
        for mechanism in mechanisms:
            out[f"image/scram/{mechanism}/{user}"] = "<secret>"
    for topic in image.topics_by_id.values():
        for base in (f"image/topics/byId/{topic.topic_id}", f"image/topics/byName/{topic.name}"):
            out[base] = None
            out[f"{base}/id"] = topic.topic_id
            out[f"{base}/name"] = topic.name
            for partition, registration in topic.partitions.items():
                out[f"{base}/{partition}"] = registration.kafka_text()
    return out


def comparable(tree: dict[str, str | None]) -> dict[str, str | None]:
    """The shell's tree without what seglog does not keep: provenance, the tool's version, the
    SCRAM credentials' salt, keys and iterations (the users and mechanisms stay)."""
    out = {}
    for path, value in tree.items():
        if path.startswith(("local", "image/provenance")) or path == "image/producerIds/nextProducerId" and value == "-1":
            continue
        if path.startswith("image/scram/") and path.count("/") == 3:
            value = "<secret>"
        out[path] = value
    return out
