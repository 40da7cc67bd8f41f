import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { describeGrpcBody } from "~/agent/parse/grpc.ts";

const frame = (message: Uint8Array, compressed = 0) => {
  const head = Buffer.alloc(5);
  head[0] = compressed;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

describe("gRPC bodies without a schema", () => {
  const person = Buffer.from([0x0a, 3, ...Buffer.from("Ann"), 0x10, 42, 0x1a, 4, 0x08, 1, 0x08, 2, 0x25, 0, 0, 0x80, 0x3f]);

  test("varints, strings, nested messages, fixed32; several messages in one body", () => {
    const body = Buffer.concat([frame(person), frame(Buffer.from([0x08, 0x96, 0x01]))]);
    expect(describeGrpcBody(body, "")).toBe('{1: "Ann", 2: 42, 3: {1: 1, 1: 2}, 4: 1065353216} {1: 150}');
  });

  test("gzip-compressed messages are decoded; other encodings and garbage are described, never thrown", () => {
    expect(describeGrpcBody(frame(gzipSync(person), 1), "gzip")).toStartWith('{1: "Ann"');
    expect(describeGrpcBody(frame(Buffer.from([1, 2, 3]), 1), "snappy")).toBe("<3 bytes, snappy>");
    expect(describeGrpcBody(frame(Buffer.from([0xff, 0xff, 0xff])), "")).toBe("<3 bytes>");
    expect(describeGrpcBody(Buffer.from([7, 0, 0, 0, 1, 1]), "")).toBe("");
  });

  test("a cut sample is marked; output is bounded", () => {
    const cut = frame(person).subarray(0, 12);
    expect(describeGrpcBody(cut, "")).toMatch(/…$/);
    const long = frame(Buffer.concat(Array.from({ length: 200 }, () => Buffer.from([0x0a, 20, ...Buffer.alloc(20, 97)]))));
    expect(describeGrpcBody(long, "", 300).length).toBeLessThanOrEqual(300);
  });
});
