package dev.kvpool.agent.pool;

/**
 * Bandwidth-proportional placement: smooth weighted round-robin (each pick adds every device's weight to its
 * credit and takes the device with the most credit, which then pays the total). Over any window of N picks each
 * device gets its share of N to within one block, so a batch of loads spreads over the devices in proportion to
 * their bandwidth and finishes on all of them at about the same time. Devices that are full are skipped.
 */
public final class Placement {
    private final double[] weight;
    private final double[] credit;
    private final double total;

    public Placement(double[] bandwidths) {
        if (bandwidths.length == 0) {
            throw new IllegalArgumentException("no devices");
        }
        weight = bandwidths.clone();
        double t = 0;
        for (int i = 0; i < weight.length; i++) {
            if (!(weight[i] > 0)) {
                weight[i] = 1e-3; // never zero: an unmeasured device still takes a trickle
            }
            t += weight[i];
        }
        total = t;
        credit = new double[weight.length];
    }

    public interface Eligible {
        boolean test(int device);
    }

    /** The next device, or -1 when none is eligible. */
    public synchronized int next(Eligible eligible) {
        int best = -1;
        double eligibleTotal = 0;
        for (int i = 0; i < weight.length; i++) {
            if (!eligible.test(i)) {
                continue;
            }
            credit[i] += weight[i];
            eligibleTotal += weight[i];
            if (best < 0 || credit[i] > credit[best]) {
                best = i;
            }
        }
        if (best >= 0) {
            credit[best] -= eligibleTotal;
        }
        return best;
    }

    public double share(int device) {
        return weight[device] / total;
    }

    public int size() {
        return weight.length;
    }
}
