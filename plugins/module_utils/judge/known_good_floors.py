# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The security floors the collection ships: per NVIDIA data-center (Tesla) Linux driver branch, the first version that
carries the fixes of the newest NVIDIA security bulletin we could read for that branch, with that bulletin.

A node whose driver is below its branch's floor is critical in readiness (version_floor); a site's own
``known_good`` floors and pins come first. A branch not listed (a branch NVIDIA no longer lists, or a newer one) is
not judged against a floor, and readiness says so. Each entry: branch -> (version, source). Update this table when
NVIDIA publishes a bulletin: https://www.nvidia.com/en-us/security/ (GPU Display Driver).

Pure data, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DRIVER_FLOORS = {
    # NVIDIA GPU Display Drivers - October 2025, bulletin 5703, CVE-2025-23280: the Tesla rows of NVIDIA PSIRT's own
    # CVE record (CVEProject/cvelistV5 cves/2025/23xxx/CVE-2025-23280.json); https://nvidia.custhelp.com/app/answers/detail/a_id/5703
    "580": ("580.95.05", "NVIDIA security bulletin 5703 (October 2025, CVE-2025-23280)"),
    "570": ("570.195.03", "NVIDIA security bulletin 5703 (October 2025, CVE-2025-23280)"),
    "535": ("535.274.02", "NVIDIA security bulletin 5703 (October 2025, CVE-2025-23280)"),
    # NVIDIA GPU Display Driver - October 2024, bulletin 5586, CVE-2024-0126: the Linux versions in the CVE record
    # (cves/2024/0xxx/CVE-2024-0126.json, its CISA ADP block quoting NVIDIA); https://nvidia.custhelp.com/app/answers/detail/a_id/5586
    "550": ("550.127.05", "NVIDIA security bulletin 5586 (October 2024, CVE-2024-0126)"),
    # NVIDIA GPU Display Driver - June 2024, bulletin 5551 (CVE-2024-0090, CVE-2024-0092), its Tesla table;
    # https://nvidia.custhelp.com/app/answers/detail/a_id/5551
    "470": ("470.256.02", "NVIDIA security bulletin 5551 (June 2024, CVE-2024-0090)"),
}
