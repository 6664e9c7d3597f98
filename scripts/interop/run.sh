#!/usr/bin/env bash
# Interop test: Python's grpcio against a real modeld.
#
#   scripts/interop/run.sh [MODELD_BINARY]     (default .build/debug/modeld)
#
# Makes (or reuses) the venv .venv, installs scripts/interop/requirements.txt into it when they
# are not installed yet, generates Python stubs from Protos/ into .build/interop-stubs, and runs
# interop_test.py, which starts modeld in a temporary directory. Exits non-zero on any failure;
# the last line is "interop: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

modeld=${1:-.build/debug/modeld}
case "$modeld" in /*) ;; *) modeld="$repo/$modeld" ;; esac
if [ ! -x "$modeld" ]; then
    echo "interop: no modeld binary at $modeld (build it first: swift build)" >&2
    exit 1
fi

venv="$repo/.venv"
requirements="$repo/scripts/interop/requirements.txt"
stamp="$venv/.interop-requirements"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1

# A venv whose interpreter no longer runs (moved, or Python replaced) is made anew.
if [ -e "$venv" ] && ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    echo "interop: the venv at $venv is broken; making it anew"
    rm -rf "$venv"
fi
if [ ! -e "$venv/bin/python" ]; then
    echo "interop: making a venv at $venv"
    if ! python3 -m venv "$venv"; then
        # Debian's python3 lacks ensurepip until python3-venv is installed.
        rm -rf "$venv"
        if command -v apt-get >/dev/null 2>&1; then
            echo "interop: installing python3-venv"
            sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
            $sudo_cmd apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-venv
            python3 -m venv "$venv"
        else
            echo "interop: python3 -m venv failed" >&2
            exit 1
        fi
    fi
fi
python="$venv/bin/python"

# Install the pinned packages only when the stamp does not match requirements.txt (or they are gone).
if ! cmp -s "$requirements" "$stamp" 2>/dev/null \
    || ! "$python" -c 'import grpc, grpc_tools, google.protobuf' >/dev/null 2>&1; then
    echo "interop: installing $(grep -cv '^\s*\(#\|$\)' "$requirements") pinned packages into $venv"
    "$python" -m pip install --quiet --requirement "$requirements"
    cp "$requirements" "$stamp"
fi

# Stubs: modeld.v1 as the package modeld.v1; grpc.health.v1 at the top level (health_pb2), as a
# generated grpc/ folder would be shadowed by grpcio's own `grpc` package.
stubs="$repo/.build/interop-stubs"
rm -rf "$stubs"
mkdir -p "$stubs"
"$python" -m grpc_tools.protoc -I Protos --python_out="$stubs" --grpc_python_out="$stubs" Protos/modeld/v1/*.proto
"$python" -m grpc_tools.protoc -I Protos/grpc/health/v1 --python_out="$stubs" --grpc_python_out="$stubs" \
    Protos/grpc/health/v1/health.proto

exec "$python" -u scripts/interop/interop_test.py "$modeld" --stubs "$stubs"
