//! sim-net: the virtual network of resim (links, latency, loss, duplication, reordering,
//! bandwidth, partitions, node crash and restart), built on sim-core. Filled by issue 3.
