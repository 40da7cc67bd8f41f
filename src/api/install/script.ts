/** Single-quotes a value for POSIX sh. */
function shQuote(value: string): string {
  return `'${value.replaceAll("'", `'"'"'`)}'`;
}

export const DEFAULT_ENDPOINT = "http://localhost:4000";

/**
 * The POSIX sh installer behind `curl -fsSL <server>/install.sh | sh`. Everything runs inside main(),
 * called on the last line, so a download cut short never executes half a script.
 */
export function installScript(serverUrl: string): string {
  return `#!/bin/sh
# Tapscope installer. Usage: curl -fsSL ${serverUrl}/install.sh | sh
# Installs the tapscope binary into ~/.local/bin (/usr/local/bin as root, or $TAPSCOPE_INSTALL_DIR).
set -eu

TAPSCOPE_SERVER=${shQuote(serverUrl)}

say() { printf '%s\\n' "$*"; }
fail() { printf 'tapscope install: %s\\n' "$*" >&2; exit 1; }

detect_arch() {
  os=$(uname -s)
  case "$os" in
    Linux) ;;
    Darwin) fail "Tapscope traces programs with Linux kernel features (seccomp). On macOS, install it inside a Linux VM or container (Debian/Ubuntu)." ;;
    *) fail "Tapscope runs on Linux only (this system is $os)." ;;
  esac
  machine=$(uname -m)
  case "$machine" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "no Tapscope build for the $machine architecture (there are builds for x86_64 and aarch64)." ;;
  esac
  if ls /lib/ld-musl-* >/dev/null 2>&1 && ! ls /lib64/ld-linux-* /lib/ld-linux-* >/dev/null 2>&1; then
    fail "this system uses musl libc (Alpine?); Tapscope needs glibc: use a Debian, Ubuntu or other glibc-based system or image."
  fi
}

download() {
  if command -v curl >/dev/null 2>&1; then
    status=$(curl -sSL -o "$2" -w '%{http_code}' "$1") || return 1
    [ "$status" = 200 ] && return 0
    server_reason "$2" "HTTP $status" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || return 1
  else
    fail "needs curl or wget to download the binary."
  fi
}

# The server answers a failed download with {"error": "..."}: show that reason.
server_reason() {
  reason=""
  if [ -s "$1" ] && [ "$(wc -c <"$1")" -lt 4096 ]; then
    reason=$(sed -n 's/.*"error":"\\(.*\\)"}.*/\\1/p' "$1" | sed 's/\\\\"/"/g')
  fi
  fail "download from $3 failed ($2)\${reason:+: $reason}"
}

# The binary runs only if its SHA-256 is the one the server publishes beside it.
verify_checksum() {
  download "$url.sha256" "$2" || fail "could not download the checksum $url.sha256."
  want=""
  read -r want _ <"$2" || true
  case "$want" in
    *[!0-9a-f]*) want="" ;;
  esac
  [ "\${#want}" -eq 64 ] || fail "the checksum from $url.sha256 is not a SHA-256; not installing."
  if command -v sha256sum >/dev/null 2>&1; then
    got=$(sha256sum "$1") || fail "sha256sum could not read the download."
  elif command -v shasum >/dev/null 2>&1; then
    got=$(shasum -a 256 "$1") || fail "shasum could not read the download."
  else
    fail "needs sha256sum (coreutils) or shasum to verify the download."
  fi
  got=\${got%% *}
  [ "$got" = "$want" ] || fail "checksum mismatch for $url: expected $want, got $got. The download is corrupt or was altered on the way; nothing was installed."
}

pick_dir() {
  if [ -n "\${TAPSCOPE_INSTALL_DIR:-}" ]; then
    dir=$TAPSCOPE_INSTALL_DIR
  elif [ "$(id -u)" = 0 ]; then
    dir=/usr/local/bin
  else
    [ -n "\${HOME:-}" ] || fail "HOME is not set; set TAPSCOPE_INSTALL_DIR to the folder to install into."
    dir=$HOME/.local/bin
  fi
  mkdir -p "$dir" || fail "cannot create $dir"
}

check_kernel() {
  release=$(uname -r)
  major=\${release%%.*}
  rest=\${release#*.}
  minor=\${rest%%[!0-9]*}
  case "$major$minor" in *[!0-9]* | "") return 0 ;; esac
  if [ "$major" -lt 5 ] || { [ "$major" -eq 5 ] && [ "$minor" -lt 9 ]; }; then
    say "Note: this kernel ($release) is older than 5.9, so 'tapscope run' cannot intercept here;"
    say "      'tapscope proxy --listen :8080 --to 127.0.0.1:3000' captures the same requests as a reverse proxy."
  fi
}

main() {
  detect_arch
  pick_dir
  url="$TAPSCOPE_SERVER/download/tapscope-linux-$arch"
  tmp="$dir/.tapscope.download.$$"
  sum="$tmp.sha256"
  trap 'rm -f "$tmp" "$sum"' EXIT
  trap 'rm -f "$tmp" "$sum"; exit 130' INT TERM
  say "Downloading tapscope for linux-$arch from $url"
  download "$url" "$tmp" || fail "download from $url failed."
  verify_checksum "$tmp" "$sum"
  chmod 755 "$tmp"
  # </dev/null: under "curl | sh" stdin is the rest of this script.
  if ! installed=$("$tmp" version 2>&1 </dev/null); then
    fail "the downloaded binary does not run on this machine: $installed"
  fi
  previous=""
  if [ -x "$dir/tapscope" ]; then previous=$("$dir/tapscope" version 2>/dev/null </dev/null || true); fi
  mv -f "$tmp" "$dir/tapscope"
  say "Installed $installed"
  say "       to $dir/tapscope"
  if [ -n "$previous" ] && [ "$previous" != "$installed" ]; then say "  (replacing $previous)"; fi
  check_kernel

  case ":\${PATH:-}:" in
    *":$dir:"*)
      found=$(command -v tapscope 2>/dev/null || true)
      if [ -n "$found" ] && [ "$found" != "$dir/tapscope" ]; then
        say ""
        say "Warning: 'tapscope' on your PATH is $found, which comes before $dir."
      fi
      run=tapscope
      ;;
    *)
      say ""
      say "$dir is not on your PATH. Add it (and to your shell profile, e.g. ~/.profile):"
      say "  export PATH=\\"$dir:\\$PATH\\""
      run=$dir/tapscope
      ;;
  esac

  say ""
  say "Next, trace any program's HTTP traffic:"
  if [ "$TAPSCOPE_SERVER" != ${shQuote(DEFAULT_ENDPOINT)} ]; then
    say "  export TAPSCOPE_ENDPOINT=$TAPSCOPE_SERVER"
  fi
  say "  $run run -- <your command>"
  say "for example: $run run -- python3 -m http.server 8000"
}

main "$@"
`;
}
