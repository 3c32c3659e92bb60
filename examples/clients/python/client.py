#!/usr/bin/env python3
"""A Python client of the gateway: requests for the HTTP API, grpcio for ProtectValues.

Gets a token, protects one JSON, XML and SQL document, uploads a CSV, and protects table rows over
gRPC. Prints one line per call: the step, then what the gateway answered (protected data).

    apt-get install python3-requests python3-grpcio    # or: pip install requests grpcio
    python3 examples/clients/python/client.py

Settings (environment): DPG_URL (http://127.0.0.1:8080), DPG_GRPC (127.0.0.1:9090), DPG_API_KEY,
DPG_CLIENT_ID, DPG_CLIENT_SECRET (the demo credentials of config/gateway.yaml).

gRPC without generated code: the three messages ProtectValues uses are encoded here by hand (a few
lines of protobuf wire format), so the example needs nothing but grpcio. A real service would
generate stubs from proto/gateway.proto with grpcio-tools (python -m grpc_tools.protoc).
"""

import json
import os
import sys

import grpc
import requests

URL = os.environ.get("DPG_URL", "http://127.0.0.1:8080")
GRPC_ADDR = os.environ.get("DPG_GRPC", "127.0.0.1:9090")
API_KEY = os.environ.get("DPG_API_KEY", "demo-api-key")
CLIENT_ID = os.environ.get("DPG_CLIENT_ID", "demo-client")
CLIENT_SECRET = os.environ.get("DPG_CLIENT_SECRET", "demo-secret")

CARD = "4111 1111 1111 1111"


def ok(res, step):
    """A failed call ends the program: the problem+json code and detail say why (never a value)."""
    if res.status_code != 200:
        sys.exit(f"{step}: HTTP {res.status_code} {res.text}")
    return res


def token():
    res = requests.post(
        f"{URL}/gateway/identity/v1/token",
        headers={"X-Api-Key": API_KEY},
        data={"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET},
        timeout=30,
    )
    return ok(res, "token").json()["access_token"]


def protect(access_token, data_set_type, data_set):
    res = requests.post(
        f"{URL}/api/protect",
        headers={"X-Resource-Token": access_token, "X-Data-Set-Type": data_set_type},
        json={"manifestName": "customer", "jobType": "Mask", "dataSet": data_set},
        timeout=30,
    )
    body = ok(res, f"protect {data_set_type}").json()
    data = body["dataSet"]
    return data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def protect_file(access_token):
    files = [
        # The metadata part first, then the file.
        ("protectFileDataset", (None, json.dumps({"manifestName": "customer", "jobType": "Mask"}), "application/json")),
        ("file", ("customers.csv", f"name,cardNumber\nJane Doe,{CARD}\n", "text/csv")),
    ]
    res = requests.post(f"{URL}/file/protect", headers={"X-Resource-Token": access_token}, files=files, timeout=60)
    return " | ".join(ok(res, "file").text.strip().splitlines())


# --- protobuf wire format for ProtectValues (field numbers from proto/gateway.proto) ---

def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited field (wire type 2): strings and embedded messages."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_request(job_config, labels, rows):
    job = _field(1, job_config["configuration_name"]) + _field(2, job_config["job_type"])
    body = _field(2, job)
    for label in labels:
        body += _field(3, label)
    for row in rows:
        body += _field(4, b"".join(_field(1, _field(1, value)) for value in row))
    return body


def _fields(data):
    """(field number, bytes) of every length-delimited field; other wire types are skipped."""
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 2:
            length, i = _read_varint(data, i)
            yield number, data[i:i + length]
            i += length
        elif wire == 0:
            _, i = _read_varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("unsupported protobuf wire type")


def _read_varint(data, i):
    shift = result = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def decode_response(data):
    rows = []
    for number, row in _fields(data):
        if number == 1:
            rows.append([
                next((v.decode("utf-8") for n, v in _fields(column) if n == 1), "")
                for n, column in _fields(row) if n == 1
            ])
    return rows


def protect_values(access_token):
    with grpc.insecure_channel(GRPC_ADDR) as channel:
        call = channel.unary_unary(
            "/com.vendor.gateway.ProtectService/ProtectValues",
            request_serializer=lambda r: r,
            response_deserializer=decode_response,
        )
        request = encode_request(
            {"configuration_name": "customer", "job_type": "Mask"},
            ["name", "cardNumber"],
            [["Jane Doe", CARD]],
        )
        try:
            rows = call(request, metadata=[("authorization", f"Bearer {access_token}")], timeout=30)
        except grpc.RpcError as err:
            sys.exit(f"grpc: {err.code()} {err.details()}")
    return " | ".join(",".join(row) for row in rows)


def main():
    access_token = token()
    print("token ok")
    print("json", protect(access_token, "JSON", {"name": "Jane Doe", "cardNumber": CARD}))
    print("xml", protect(access_token, "XML", f"<customer><name>Jane Doe</name><cardNumber>{CARD}</cardNumber></customer>"))
    print("sql", protect(access_token, "SQL", f"INSERT INTO customers (name, cardNumber) VALUES ('Jane Doe', '{CARD}')"))
    print("csv", protect_file(access_token))
    print("grpc", protect_values(access_token))


if __name__ == "__main__":
    main()
