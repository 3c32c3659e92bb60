# mitmproxy addon for bench/peers.bench.ts: masks the 1 KB workload's customer fields (name, email,
# card number, phone) roughly the way the customer manifest's Mask rules do, so the peer does
# comparable work per request: parse the JSON body, rewrite four values, serialise it again.
import json


def _keep_last(value, n):
    return "".join("*" if ch.isdigit() else ch for ch in value[:-n]) + value[-n:]


def _initials(value):
    return " ".join(word[:1] + "*" * (len(word) - 1) for word in value.split(" "))


def request(flow):
    if not flow.request.path.startswith("/protect/"):
        return
    doc = json.loads(flow.request.get_content())
    customer = doc.get("customer", {})
    if "name" in customer:
        customer["name"] = _initials(customer["name"])
    if "email" in customer:
        local, _, domain = customer["email"].partition("@")
        customer["email"] = local[:1] + "***@" + domain
    if "cardNumber" in customer:
        customer["cardNumber"] = _keep_last(customer["cardNumber"], 4)
    if "phone" in customer:
        customer["phone"] = _keep_last(customer["phone"], 4)
    flow.request.set_content(json.dumps(doc, separators=(",", ":")).encode())
