#!/usr/bin/env bash
# Installs what rigel needs to build and test on a fresh Debian 12 machine.
# Idempotent: a second run installs nothing. The CUDA toolkit is optional (the
# CPU half builds without it) and is not installed here. The sanitizer runtimes
# of the asan preset (libasan8, libubsan1) come with g++; scripts/run_default.sh
# needs only bash and awk.
set -euo pipefail

packages=(cmake ninja-build g++ make git pkg-config libcli11-dev libgtest-dev googletest
          libopenblas-dev python3 python3-matplotlib python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
