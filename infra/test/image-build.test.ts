import { describe, expect, it } from "vitest";
import { ZSTD_IMAGE_OUTPUT, imageBuildOutputs } from "../src/cdk/image-build";

describe("imageBuildOutputs", () => {
  it("asks Docker (and any builder but Podman) for zstd layers, OCI media types, recompressing the base's", () => {
    expect(ZSTD_IMAGE_OUTPUT).toBe("type=image,compression=zstd,force-compression=true,oci-mediatypes=true");
    expect(imageBuildOutputs(undefined, undefined)).toEqual([ZSTD_IMAGE_OUTPUT]);
    expect(imageBuildOutputs(undefined, "finch")).toEqual([ZSTD_IMAGE_OUTPUT]);
  });

  it("passes no output for Podman, whose build takes none of type image, unless zstd is asked for", () => {
    expect(imageBuildOutputs(undefined, "podman")).toBeUndefined();
    expect(imageBuildOutputs(undefined, "/opt/homebrew/bin/podman")).toBeUndefined();
    expect(imageBuildOutputs("zstd", "podman")).toEqual([ZSTD_IMAGE_OUTPUT]);
  });

  it("passes no output when asked for gzip: every builder's default", () => {
    expect(imageBuildOutputs("gzip", undefined)).toBeUndefined();
  });
});
