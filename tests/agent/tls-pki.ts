import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Test certificates made with the openssl command line in a scratch directory. */
export type Pem = { cert: string; key: string };

function openssl(dir: string, args: string[]): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
}

function read(dir: string, name: string): Pem {
  return { cert: readFileSync(join(dir, `${name}.crt`), "utf8"), key: readFileSync(join(dir, `${name}.key`), "utf8") };
}

const P256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

export function makeCa(dir: string, name: string): Pem {
  openssl(dir, [
    "req",
    "-x509",
    ...P256,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  return read(dir, name);
}

/** A leaf signed by CA `ca` for `altNames` ("DNS:x", "IP:1.2.3.4"); `expired` makes one valid only in 2020. */
export function makeLeaf(dir: string, ca: string, name: string, altNames: string[], expired = false): Pem {
  openssl(dir, ["req", ...P256, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`]);
  const ext = `subjectAltName=${altNames.join(",")}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n`;
  writeFileSync(join(dir, `${name}.ext`), ext);
  if (!expired) {
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${ca}.crt`,
      "-CAkey",
      `${ca}.key`,
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
    ]);
    return read(dir, name);
  }
  const config = `[ca]\ndefault_ca=d\n[d]\ndatabase=${name}.index\nnew_certs_dir=.\ndefault_md=sha256\npolicy=p\nserial=${name}.serial\n[p]\ncommonName=supplied\n`;
  writeFileSync(join(dir, `${name}.cnf`), config);
  writeFileSync(join(dir, `${name}.index`), "");
  writeFileSync(join(dir, `${name}.serial`), "01\n");
  openssl(dir, [
    "ca",
    "-batch",
    "-config",
    `${name}.cnf`,
    "-keyfile",
    `${ca}.key`,
    "-cert",
    `${ca}.crt`,
    "-startdate",
    "20200101000000Z",
    "-enddate",
    "20200102000000Z",
    "-extfile",
    `${name}.ext`,
    "-in",
    `${name}.csr`,
    "-out",
    `${name}.crt`,
    "-notext",
  ]);
  return read(dir, name);
}
