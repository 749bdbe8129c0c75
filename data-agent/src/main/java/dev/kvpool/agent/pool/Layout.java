package dev.kvpool.agent.pool;

/**
 * How a block's layers are kept ({@code kvpool.agent.layers}, {@code kvpool.agent.layout}). A block is layer-major
 * as the engine sees it: layer i is bytes [i*L, (i+1)*L), L = block bytes / layers. {@code contiguous} keeps a block
 * in one piece (today's layout, one CRC32C per block); {@code layered} keeps each layer addressable on its own, with
 * a CRC32C per layer: on NVMe the slot file is cut into one region per layer (layer i of slot s at region i, slot s),
 * so layer i of blocks in neighbouring slots is neighbouring on disk; in host memory a block stays in one piece
 * (layer i of a slot is already at slot + i*L: memory has no seek to save).
 */
public record Layout(int layers, boolean layered) {
    public static final Layout CONTIGUOUS = new Layout(1, false);

    /** The layout the settings name, checked against the block size; throws naming the setting at fault. */
    public static Layout of(String layout, int layers, int blockBytes) {
        if (layers < 1 || layers > 4096) {
            throw new IllegalArgumentException("kvpool.agent.layers: must be 1 to 4096 (layers per block), got "
                    + layers);
        }
        if (blockBytes % layers != 0) {
            throw new IllegalArgumentException("kvpool.agent.layers: block-bytes " + blockBytes
                    + " must be divisible by layers " + layers);
        }
        boolean layered = switch (layout == null ? "" : layout) {
            case "contiguous" -> false;
            case "layered" -> true;
            default -> throw new IllegalArgumentException("kvpool.agent.layout: 'contiguous' or 'layered', got '"
                    + dev.kvpool.api.naming.Text.safe(String.valueOf(layout)) + "'");
        };
        if (layered && (blockBytes / layers) % 4096 != 0) {
            throw new IllegalArgumentException("kvpool.agent.layout: layered needs the layer size (block-bytes / layers"
                    + " = " + blockBytes + " / " + layers + ") to be a multiple of 4096 (O_DIRECT reads of one layer)");
        }
        return new Layout(layers, layered);
    }

    public int layerBytes(int blockBytes) {
        return blockBytes / layers;
    }

    /** Layers kept and verified one by one: a layered layout of more than one layer. */
    public boolean perLayer() {
        return layered && layers > 1;
    }

    public String name() {
        return layered ? "layered" : "contiguous";
    }
}
