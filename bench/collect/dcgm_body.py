#!/usr/bin/python3
"""Prints a dcgm-exporter-sized /metrics body for bench/collect/run.sh (BENCH_COLLECT_BODY).

usage: dcgm_body.py [GPUS] > body.prom          (default 8 GPUs: an HGX node)

The families of dcgm-exporter's etc/default-counters.csv (clocks, temperatures, power, the
energy counter, PCIe replays, utilizations, XID, framebuffer, NVLink, remapped rows, the
profiling ratios and PCIe bytes), each with its # HELP and # TYPE lines and one sample per GPU
with the labels dcgm-exporter prints (gpu, UUID, pci_bus_id, device, modelName, Hostname,
DCGM_FI_DRIVER_VERSION), integers as %d and doubles as %f, as its renderer writes them.
"""
import sys

FAMILIES = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "i", 1980),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "i", 2619),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "i", 41),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "i", 38),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "f", 512.25),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", "i", 43353010321),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "i", 0),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "i", 97),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "i", 31),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", "i", 0),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", "i", 0),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "i", 0),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "i", 3042),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "i", 138210),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes.", "i", 987654321),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", "i", 0),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors", "i", 0),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors", "i", 0),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", "i", 0),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
     "Ratio of time the graphics engine is active.", "f", 0.912345),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.", "f", 0.423456),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.", "f",
     0.612345),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - "
     "including both protocol headers and data payloads - in bytes per second.", "i", 123456789),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - "
     "including both protocol headers and data payloads - in bytes per second.", "i", 98765432),
]


def main():
    gpus = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    out = []
    for name, typ, help_, fmt, value in FAMILIES:
        out.append(f"# HELP {name} {help_}\n# TYPE {name} {typ}\n")
        for g in range(gpus):
            labels = (f'gpu="{g}",UUID="GPU-{0x3f2a19c4 + g:08x}-5b7e-4c1d-9e8f-0a1b2c3d4e5f",'
                      f'pci_bus_id="00000000:{0x18 + 0x10 * g:02X}:00.0",device="nvidia{g}",'
                      f'modelName="NVIDIA H200",Hostname="gpu-node-01",'
                      f'DCGM_FI_DRIVER_VERSION="570.124.06"')
            v = value + g if fmt == "i" else value + 0.001 * g
            out.append(f"{name}{{{labels}}} {v:d}\n" if fmt == "i" else
                       f"{name}{{{labels}}} {v:f}\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
