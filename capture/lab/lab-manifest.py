#!/usr/bin/env python3
"""Turn the lab's run record (manifest.json written inside the guest) into
a capture manifest of schemas/manifest.schema.json, keeping the lab's own
fields under "lab".

usage: lab-manifest.py LAB_MANIFEST > manifest.json
"""
import json
import sys


def convert(lab):
    if lab.get("manifest_version") == 1:
        return lab                      # already a capture manifest
    ch = lab.get("channel", {})
    # run.sh --snapshot-at sizes the channel in KiB (sub-buffers below
    # 1 MiB); older lab manifests have the MiB fields only.
    kb = ch.get("subbuf_size_kb")
    if kb:
        subbuf = "%dM" % (kb // 1024) if kb % 1024 == 0 else "%dK" % kb
        nsubbuf = ch.get("num_subbuf", 0)
    else:
        subbuf = "%dM" % ch.get("subbuf_size_mb", 0)
        nsubbuf = (ch.get("per_cpu_buffer_mb", 0) //
                   max(ch.get("subbuf_size_mb", 1), 1))
    return {
        "manifest_version": 1,
        "hostname": lab.get("host", ""),
        "kernel_release": lab.get("kernel_release", ""),
        "kernel_version": lab.get("kernel_version", ""),
        "cpu": {"vendor": lab.get("cpu_vendor", "unknown"),
                "model": lab.get("cpu_model", ""),
                "count": ch.get("cpus", 0)},
        "kvm": {"params": lab.get("kvm_params", {})},
        "vms": [],
        "workload": (lab.get("workload", "") + " " +
                     lab.get("workload_args", "")).strip(),
        "trace": {
            "kernel_events": [lab.get("events", "")],
            "missing_events": [],
            "kernel_subbuf_size": subbuf,
            "kernel_num_subbuf": nsubbuf,
            "ust": bool(lab.get("ust")),
            "discarded_events": lab.get("discarded_events"),
        },
        "lab": lab,
    }


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 1)
    with open(sys.argv[1]) as f:
        json.dump(convert(json.load(f)), sys.stdout, indent=2)
        sys.stdout.write("\n")
