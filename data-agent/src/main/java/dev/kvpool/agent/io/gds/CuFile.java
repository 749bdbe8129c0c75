package dev.kvpool.agent.io.gds;

import dev.kvpool.agent.io.uring.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * cuFile (GPUDirect Storage, {@code libcufile.so.0}, cuFile 1.15 / CUDA 13) bound with FFM and loaded lazily: nothing
 * links against it, the library is looked up the first time {@link #load} is called (a path from
 * {@code kvpool.agent.gds.library}, else the loader's search for {@code libcufile.so.0}), and a missing library or
 * symbol is a {@link Unavailable} carrying the reason, never an error through the agent.
 *
 * <p>ABI notes (Linux x86-64 and aarch64, from {@code cufile.h} of the nvidia-cufile wheel):
 * <ul>
 *   <li>{@code CUfileError_t} is {@code struct {int err; int cu_err;}}, 8 bytes, returned by value: both ABIs return
 *   it in one integer register, so it is bound as a {@code long} (a canonical C type the native image's metadata
 *   can name) and split by {@link Status#of} ({@code err} is the low half, little-endian).</li>
 *   <li>{@code cuFileRead}/{@code cuFileWrite} return {@code ssize_t}: bytes moved; -1 with errno set; any other
 *   negative value is -{@code CUfileOpError}. errno is captured on every call.</li>
 *   <li>Struct layouts: {@link #DESCR} 24 B, {@link #IO_PARAMS} 64 B, {@link #IO_EVENTS} 24 B, {@link #DRV_PROPS}
 *   56 B, {@link #TIMESPEC} 16 B; held by {@code CuFileLayoutTest}.</li>
 * </ul>
 * Every downcall is declared in {@link #DOWNCALLS} and bound through {@link Libc#bind(Libc.Downcall, SymbolLookup)}
 * (the native image's metadata lists them); all cuFile calls are thread-safe (the library's own rule), GPU-buffer
 * calls need the device's CUDA context current on the calling thread.
 */
public final class CuFile implements CuFileApi {
    public static final String LIBRARY_PROPERTY = "kvpool.agent.gds.library";
    public static final String DEFAULT_LIBRARY = "libcufile.so.0";

    public static final int HANDLE_TYPE_OPAQUE_FD = 1;
    public static final int OP_READ = 0, OP_WRITE = 1;
    public static final int BATCH_MODE = 1;
    public static final int STATUS_WAITING = 0x1, STATUS_PENDING = 0x2, STATUS_INVALID = 0x4, STATUS_CANCELED = 0x8,
            STATUS_COMPLETE = 0x10, STATUS_TIMEOUT = 0x20, STATUS_FAILED = 0x40;
    public static final int HANDLE_NOT_REGISTERED = 5027;

    // ---- layouts ------------------------------------------------------------------------------------------------
    public static final StructLayout ERROR = MemoryLayout.structLayout(
            ValueLayout.JAVA_INT.withName("err"), ValueLayout.JAVA_INT.withName("cu_err"));
    public static final StructLayout DESCR = MemoryLayout.structLayout(
            ValueLayout.JAVA_INT.withName("type"), MemoryLayout.paddingLayout(4),
            MemoryLayout.unionLayout(ValueLayout.JAVA_INT.withName("fd"), ValueLayout.ADDRESS.withName("handle"))
                    .withName("handle"),
            ValueLayout.ADDRESS.withName("fs_ops"));
    public static final StructLayout IO_PARAMS = MemoryLayout.structLayout(
            ValueLayout.JAVA_INT.withName("mode"), MemoryLayout.paddingLayout(4),
            MemoryLayout.structLayout(ValueLayout.ADDRESS.withName("devPtr_base"),
                    ValueLayout.JAVA_LONG.withName("file_offset"), ValueLayout.JAVA_LONG.withName("devPtr_offset"),
                    ValueLayout.JAVA_LONG.withName("size")).withName("batch"),
            ValueLayout.ADDRESS.withName("fh"), ValueLayout.JAVA_INT.withName("opcode"), MemoryLayout.paddingLayout(4),
            ValueLayout.ADDRESS.withName("cookie"));
    public static final StructLayout IO_EVENTS = MemoryLayout.structLayout(
            ValueLayout.ADDRESS.withName("cookie"), ValueLayout.JAVA_INT.withName("status"),
            MemoryLayout.paddingLayout(4), ValueLayout.JAVA_LONG.withName("ret"));
    public static final StructLayout TIMESPEC = MemoryLayout.structLayout(
            ValueLayout.JAVA_LONG.withName("tv_sec"), ValueLayout.JAVA_LONG.withName("tv_nsec"));
    public static final StructLayout DRV_PROPS = MemoryLayout.structLayout(
            MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("major_version"),
                    ValueLayout.JAVA_INT.withName("minor_version"), ValueLayout.JAVA_LONG.withName("poll_thresh_size"),
                    ValueLayout.JAVA_LONG.withName("max_direct_io_size"), ValueLayout.JAVA_INT.withName("dstatusflags"),
                    ValueLayout.JAVA_INT.withName("dcontrolflags")).withName("nvfs"),
            ValueLayout.JAVA_INT.withName("fflags"), ValueLayout.JAVA_INT.withName("max_device_cache_size"),
            ValueLayout.JAVA_INT.withName("per_buffer_cache_size"),
            ValueLayout.JAVA_INT.withName("max_device_pinned_mem_size"),
            ValueLayout.JAVA_INT.withName("max_batch_io_size"),
            ValueLayout.JAVA_INT.withName("max_batch_io_timeout_msecs"));

    static long offset(StructLayout l, String... path) {
        MemoryLayout.PathElement[] p = new MemoryLayout.PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = MemoryLayout.PathElement.groupElement(path[i]);
        }
        return l.byteOffset(p);
    }

    static final long P_MODE = offset(IO_PARAMS, "mode"), P_BASE = offset(IO_PARAMS, "batch", "devPtr_base"),
            P_FILE_OFF = offset(IO_PARAMS, "batch", "file_offset"), P_DEV_OFF = offset(IO_PARAMS, "batch", "devPtr_offset"),
            P_SIZE = offset(IO_PARAMS, "batch", "size"), P_FH = offset(IO_PARAMS, "fh"),
            P_OPCODE = offset(IO_PARAMS, "opcode"), P_COOKIE = offset(IO_PARAMS, "cookie");
    static final long E_COOKIE = offset(IO_EVENTS, "cookie"), E_STATUS = offset(IO_EVENTS, "status"),
            E_RET = offset(IO_EVENTS, "ret");

    // ---- downcalls ------------------------------------------------------------------------------------------------
    private static final ValueLayout.OfLong ERR = ValueLayout.JAVA_LONG; // CUfileError_t, see the class comment
    private static final ValueLayout.OfLong SIZE_T = ValueLayout.JAVA_LONG, OFF_T = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt UINT = ValueLayout.JAVA_INT;
    private static final java.lang.foreign.AddressLayout PTR = ValueLayout.ADDRESS;

    public static final Libc.Downcall DRIVER_OPEN = new Libc.Downcall("cuFileDriverOpen", FunctionDescriptor.of(ERR), -1, false);
    public static final Libc.Downcall DRIVER_CLOSE = new Libc.Downcall("cuFileDriverClose_v2", FunctionDescriptor.of(ERR), -1, false);
    public static final Libc.Downcall GET_VERSION = new Libc.Downcall("cuFileGetVersion", FunctionDescriptor.of(ERR, PTR), -1, false);
    public static final Libc.Downcall DRIVER_PROPS = new Libc.Downcall("cuFileDriverGetProperties",
            FunctionDescriptor.of(ERR, PTR), -1, false);
    public static final Libc.Downcall HANDLE_REGISTER = new Libc.Downcall("cuFileHandleRegister",
            FunctionDescriptor.of(ERR, PTR, PTR), -1, false);
    public static final Libc.Downcall HANDLE_DEREGISTER = new Libc.Downcall("cuFileHandleDeregister",
            FunctionDescriptor.ofVoid(PTR), -1, false);
    public static final Libc.Downcall BUF_REGISTER = new Libc.Downcall("cuFileBufRegister",
            FunctionDescriptor.of(ERR, PTR, SIZE_T, ValueLayout.JAVA_INT), -1, false);
    public static final Libc.Downcall BUF_DEREGISTER = new Libc.Downcall("cuFileBufDeregister",
            FunctionDescriptor.of(ERR, PTR), -1, false);
    /** {@code ssize_t cuFileRead(CUfileHandle_t fh, void *base, size_t size, off_t file_off, off_t base_off)}. */
    public static final Libc.Downcall READ = new Libc.Downcall("cuFileRead",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, PTR, PTR, SIZE_T, OFF_T, OFF_T), -1, true);
    public static final Libc.Downcall WRITE = new Libc.Downcall("cuFileWrite",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, PTR, PTR, SIZE_T, OFF_T, OFF_T), -1, true);
    public static final Libc.Downcall BATCH_SETUP = new Libc.Downcall("cuFileBatchIOSetUp",
            FunctionDescriptor.of(ERR, PTR, UINT), -1, false);
    public static final Libc.Downcall BATCH_SUBMIT = new Libc.Downcall("cuFileBatchIOSubmit",
            FunctionDescriptor.of(ERR, PTR, UINT, PTR, UINT), -1, false);
    public static final Libc.Downcall BATCH_STATUS = new Libc.Downcall("cuFileBatchIOGetStatus",
            FunctionDescriptor.of(ERR, PTR, UINT, PTR, PTR, PTR), -1, false);
    public static final Libc.Downcall BATCH_CANCEL = new Libc.Downcall("cuFileBatchIOCancel",
            FunctionDescriptor.of(ERR, PTR), -1, false);
    public static final Libc.Downcall BATCH_DESTROY = new Libc.Downcall("cuFileBatchIODestroy",
            FunctionDescriptor.ofVoid(PTR), -1, false);

    /** Every cuFile downcall (registered for the native image beside {@link Libc#DOWNCALLS}). */
    public static final List<Libc.Downcall> DOWNCALLS = List.of(DRIVER_OPEN, DRIVER_CLOSE, GET_VERSION, DRIVER_PROPS,
            HANDLE_REGISTER, HANDLE_DEREGISTER, BUF_REGISTER, BUF_DEREGISTER, READ, WRITE, BATCH_SETUP, BATCH_SUBMIT,
            BATCH_STATUS, BATCH_CANCEL, BATCH_DESTROY);

    /** {@code CUfileOpError} names (cufile.h of cuFile 1.15). */
    static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(0, "CU_FILE_SUCCESS"),
            Map.entry(5001, "CU_FILE_DRIVER_NOT_INITIALIZED"),
            Map.entry(5002, "CU_FILE_DRIVER_INVALID_PROPS"),
            Map.entry(5003, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT"),
            Map.entry(5004, "CU_FILE_DRIVER_VERSION_MISMATCH"),
            Map.entry(5005, "CU_FILE_DRIVER_VERSION_READ_ERROR"),
            Map.entry(5006, "CU_FILE_DRIVER_CLOSING"),
            Map.entry(5007, "CU_FILE_PLATFORM_NOT_SUPPORTED"),
            Map.entry(5008, "CU_FILE_IO_NOT_SUPPORTED"),
            Map.entry(5009, "CU_FILE_DEVICE_NOT_SUPPORTED"),
            Map.entry(5010, "CU_FILE_NVFS_DRIVER_ERROR"),
            Map.entry(5011, "CU_FILE_CUDA_DRIVER_ERROR"),
            Map.entry(5012, "CU_FILE_CUDA_POINTER_INVALID"),
            Map.entry(5013, "CU_FILE_CUDA_MEMORY_TYPE_INVALID"),
            Map.entry(5014, "CU_FILE_CUDA_POINTER_RANGE_ERROR"),
            Map.entry(5015, "CU_FILE_CUDA_CONTEXT_MISMATCH"),
            Map.entry(5016, "CU_FILE_INVALID_MAPPING_SIZE"),
            Map.entry(5017, "CU_FILE_INVALID_MAPPING_RANGE"),
            Map.entry(5018, "CU_FILE_INVALID_FILE_TYPE"),
            Map.entry(5019, "CU_FILE_INVALID_FILE_OPEN_FLAG"),
            Map.entry(5020, "CU_FILE_DIO_NOT_SET"),
            Map.entry(5022, "CU_FILE_INVALID_VALUE"),
            Map.entry(5023, "CU_FILE_MEMORY_ALREADY_REGISTERED"),
            Map.entry(5024, "CU_FILE_MEMORY_NOT_REGISTERED"),
            Map.entry(5025, "CU_FILE_PERMISSION_DENIED"),
            Map.entry(5026, "CU_FILE_DRIVER_ALREADY_OPEN"),
            Map.entry(5027, "CU_FILE_HANDLE_NOT_REGISTERED"),
            Map.entry(5028, "CU_FILE_HANDLE_ALREADY_REGISTERED"),
            Map.entry(5029, "CU_FILE_DEVICE_NOT_FOUND"),
            Map.entry(5030, "CU_FILE_INTERNAL_ERROR"),
            Map.entry(5031, "CU_FILE_GETNEWFD_FAILED"),
            Map.entry(5033, "CU_FILE_NVFS_SETUP_ERROR"),
            Map.entry(5034, "CU_FILE_IO_DISABLED"),
            Map.entry(5035, "CU_FILE_BATCH_SUBMIT_FAILED"),
            Map.entry(5036, "CU_FILE_GPU_MEMORY_PINNING_FAILED"),
            Map.entry(5037, "CU_FILE_BATCH_FULL"),
            Map.entry(5038, "CU_FILE_ASYNC_NOT_SUPPORTED"),
            Map.entry(5039, "CU_FILE_INTERNAL_BATCH_SETUP_ERROR"),
            Map.entry(5040, "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR"),
            Map.entry(5041, "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR"),
            Map.entry(5042, "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR"),
            Map.entry(5043, "CU_FILE_NOMEM_ERROR"),
            Map.entry(5044, "CU_FILE_IO_ERROR"),
            Map.entry(5045, "CU_FILE_INTERNAL_BUF_REGISTER_ERROR"),
            Map.entry(5046, "CU_FILE_HASH_OPR_ERROR"),
            Map.entry(5047, "CU_FILE_INVALID_CONTEXT_ERROR"),
            Map.entry(5048, "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR"),
            Map.entry(5049, "CU_FILE_BATCH_NOCOMPAT_ERROR"),
            Map.entry(5050, "CU_FILE_IO_MAX_ERROR"));

    /** A {@code CUfileOpError} code's name, or {@code CUfileOpError <n>} for one this binding does not know. */
    public static String errorName(int code) {
        String n = NAMES.get(code);
        return n != null ? n : "CUfileOpError " + code;
    }

    /** A {@code CUfileError_t}: the cuFile error and, for {@code CU_FILE_CUDA_DRIVER_ERROR}, the CUDA driver's. */
    public record Status(int err, int cuErr) {
        /** Splits the by-value struct returned in one register: {@code err} is the low 32 bits. */
        public static Status of(long raw) {
            return new Status((int) raw, (int) (raw >>> 32));
        }

        public boolean ok() {
            return err == 0;
        }

        @Override
        public String toString() {
            return errorName(err) + (cuErr != 0 ? " (CUresult " + cuErr + ")" : "");
        }
    }

    /**
     * What a {@code ssize_t} result of cuFileRead/cuFileWrite (or a batch event's {@code ret}) means: null when it is
     * a byte count, else the error: -1 is errno's, other negatives are -{@code CUfileOpError}.
     */
    public static String describeResult(long ret, int errno) {
        if (ret >= 0) {
            return null;
        }
        if (ret == -1) {
            return "errno " + errno;
        }
        return ret < Integer.MIN_VALUE ? "result " + ret : errorName((int) -ret);
    }

    /** cuFile cannot be used here; {@link #getMessage} says why. */
    public static final class Unavailable extends Exception {
        public Unavailable(String reason, Throwable cause) {
            super(reason, cause, false, false);
        }

        public Unavailable(String reason) {
            this(reason, null);
        }
    }

    /** A cuFile call that returned an error. */
    public static final class CuFileException extends RuntimeException {
        public final Status status;

        public CuFileException(String call, Status status) {
            super(call + ": " + status, null, false, false);
            this.status = status;
        }
    }

    private static final VarHandle ERRNO = java.lang.foreign.Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final long STATE_SIZE = java.lang.foreign.Linker.Option.captureStateLayout().byteSize();

    private final String library;
    private final MethodHandle driverOpen, driverClose, getVersion, driverProps, handleRegister, handleDeregister,
            bufRegister, bufDeregister, read, write, batchSetUp, batchSubmit, batchStatus, batchCancel, batchDestroy;

    private CuFile(String library, SymbolLookup lib) {
        this.library = library;
        driverOpen = Libc.bind(DRIVER_OPEN, lib);
        driverClose = Libc.bind(DRIVER_CLOSE, lib);
        getVersion = Libc.bind(GET_VERSION, lib);
        driverProps = Libc.bind(DRIVER_PROPS, lib);
        handleRegister = Libc.bind(HANDLE_REGISTER, lib);
        handleDeregister = Libc.bind(HANDLE_DEREGISTER, lib);
        bufRegister = Libc.bind(BUF_REGISTER, lib);
        bufDeregister = Libc.bind(BUF_DEREGISTER, lib);
        read = Libc.bind(READ, lib);
        write = Libc.bind(WRITE, lib);
        batchSetUp = Libc.bind(BATCH_SETUP, lib);
        batchSubmit = Libc.bind(BATCH_SUBMIT, lib);
        batchStatus = Libc.bind(BATCH_STATUS, lib);
        batchCancel = Libc.bind(BATCH_CANCEL, lib);
        batchDestroy = Libc.bind(BATCH_DESTROY, lib);
    }

    /** The library {@code kvpool.agent.gds.library} names, else the loader's {@code libcufile.so.0}. */
    public static String configuredLibrary() {
        String p = System.getProperty(LIBRARY_PROPERTY);
        return p == null || p.isBlank() ? DEFAULT_LIBRARY : p;
    }

    /**
     * Loads libcufile and binds every symbol (the driver is not opened yet).
     *
     * @param library a path (containing '/') or a soname for the loader's search
     * @throws Unavailable when the library or one of its symbols is missing
     */
    public static CuFile load(String library) throws Unavailable {
        String lib = library.contains("/") ? Path.of(library).toAbsolutePath().toString() : library;
        SymbolLookup lookup;
        try { // global arena: a loaded libcufile stays loaded (it cannot be unloaded safely once the driver is open)
            lookup = SymbolLookup.libraryLookup(lib, Arena.global());
        } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
            throw new Unavailable("libcufile not loadable (" + lib + "): " + e.getMessage(), e);
        }
        try {
            return new CuFile(lib, lookup);
        } catch (RuntimeException | LinkageError e) {
            throw new Unavailable(lib + " lacks a cuFile symbol this agent uses (cuFile >= 1.7 needed): "
                    + e.getMessage(), e);
        }
    }

    public String library() {
        return library;
    }

    private static Status check(String call, long raw) {
        Status s = Status.of(raw);
        if (!s.ok()) {
            throw new CuFileException(call, s);
        }
        return s;
    }

    public void driverOpen() {
        try {
            check("cuFileDriverOpen", (long) driverOpen.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public Status driverClose() {
        try {
            return Status.of((long) driverClose.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuFileGetVersion: e.g. 1150 for cuFile 1.15. */
    public int version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(ValueLayout.JAVA_INT);
            check("cuFileGetVersion", (long) getVersion.invokeExact(v));
            return v.get(ValueLayout.JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The driver's properties (after {@link #driverOpen}); a copy in a heap segment. */
    public MemorySegment driverProperties() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(DRV_PROPS);
            check("cuFileDriverGetProperties", (long) driverProps.invokeExact(p));
            MemorySegment out = MemorySegment.ofArray(new long[(int) (DRV_PROPS.byteSize() / 8)]);
            out.copyFrom(p);
            return out;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** nvidia-fs version from the driver properties, as {major, minor}; {0, 0} where nvidia-fs is absent. */
    public static int[] nvfsVersion(MemorySegment props) {
        long nvfs = offset(DRV_PROPS, "nvfs");
        return new int[] {props.get(ValueLayout.JAVA_INT_UNALIGNED, nvfs), props.get(ValueLayout.JAVA_INT_UNALIGNED, nvfs + 4)};
    }

    /**
     * The driver's limits in words (units as cufile.h's setters take them, KiB), so a log or the bench shows what a
     * batch runs against: max_direct_io_size, max_device_cache_size (compat bounce buffers), per_buffer_cache_size,
     * max_device_pinned_mem_size, max_batch_io_size, max_batch_io_timeout_msecs.
     */
    public static String limits(MemorySegment props) {
        java.util.function.ToLongFunction<String> i = n -> Integer.toUnsignedLong(
                props.get(ValueLayout.JAVA_INT_UNALIGNED, offset(DRV_PROPS, n)));
        long direct = props.get(ValueLayout.JAVA_LONG_UNALIGNED, offset(DRV_PROPS, "nvfs", "max_direct_io_size"));
        return "max_direct_io_size " + direct + ", max_device_cache_size " + i.applyAsLong("max_device_cache_size")
                + ", per_buffer_cache_size " + i.applyAsLong("per_buffer_cache_size")
                + ", max_device_pinned_mem_size " + i.applyAsLong("max_device_pinned_mem_size")
                + ", max_batch_io_size " + i.applyAsLong("max_batch_io_size")
                + ", max_batch_io_timeout_msecs " + i.applyAsLong("max_batch_io_timeout_msecs");
    }

    /** max_device_cache_size / per_buffer_cache_size: how many bounce buffers cuFile keeps per GPU; 0 if unknown. */
    public static int bounceBuffers(MemorySegment props) {
        long cache = Integer.toUnsignedLong(props.get(ValueLayout.JAVA_INT_UNALIGNED,
                offset(DRV_PROPS, "max_device_cache_size")));
        long per = Integer.toUnsignedLong(props.get(ValueLayout.JAVA_INT_UNALIGNED,
                offset(DRV_PROPS, "per_buffer_cache_size")));
        return per == 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, cache / per);
    }

    public static int maxBatchIoSize(MemorySegment props) {
        return props.get(ValueLayout.JAVA_INT_UNALIGNED, offset(DRV_PROPS, "max_batch_io_size"));
    }

    /** Registers an fd (opened with O_DIRECT); returns the cuFile handle. */
    public MemorySegment handleRegister(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = a.allocate(DESCR);
            d.set(ValueLayout.JAVA_INT, offset(DESCR, "type"), HANDLE_TYPE_OPAQUE_FD);
            d.set(ValueLayout.JAVA_INT, offset(DESCR, "handle"), fd);
            MemorySegment fh = a.allocate(ValueLayout.ADDRESS);
            check("cuFileHandleRegister(fd " + fd + ")", (long) handleRegister.invokeExact(fh, d));
            return fh.get(ValueLayout.ADDRESS, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void handleDeregister(MemorySegment fh) {
        try {
            handleDeregister.invokeExact(fh);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void bufRegister(long devPtr, long length) {
        try {
            check("cuFileBufRegister(" + (length >> 20) + " MiB)",
                    (long) bufRegister.invokeExact(MemorySegment.ofAddress(devPtr), length, 0));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public Status bufDeregister(long devPtr) {
        try {
            return Status.of((long) bufDeregister.invokeExact(MemorySegment.ofAddress(devPtr)));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** One synchronous transfer: bytes moved, or a negative result ({@link #describeResult}); errno in {@code errno[0]}. */
    public long io(boolean write, MemorySegment fh, long devBase, long size, long fileOffset, long devOffset,
                   int[] errno) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(STATE_SIZE);
            MethodHandle h = write ? this.write : this.read;
            long r = (long) h.invokeExact(st, fh, MemorySegment.ofAddress(devBase), size, fileOffset, devOffset);
            errno[0] = r == -1 ? (int) ERRNO.get(st, 0L) : 0;
            return r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuFileBatchIOSetUp for up to {@code nr} ops per submission. */
    public MemorySegment batchSetUp(int nr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment b = a.allocate(ValueLayout.ADDRESS);
            check("cuFileBatchIOSetUp(" + nr + ")", (long) batchSetUp.invokeExact(b, nr));
            return b.get(ValueLayout.ADDRESS, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void batchSubmit(MemorySegment batch, int nr, MemorySegment params) {
        try {
            check("cuFileBatchIOSubmit(" + nr + ")", (long) batchSubmit.invokeExact(batch, nr, params, 0));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * cuFileBatchIOGetStatus: waits for at least {@code minNr} completions (or the timeout) and writes up to
     * {@code maxNr} events; returns how many it wrote.
     */
    public int batchStatus(MemorySegment batch, int minNr, int maxNr, MemorySegment events, long timeoutNanos) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment nr = a.allocate(ValueLayout.JAVA_INT);
            nr.set(ValueLayout.JAVA_INT, 0, maxNr);
            MemorySegment ts = a.allocate(TIMESPEC);
            ts.set(ValueLayout.JAVA_LONG, 0, timeoutNanos / 1_000_000_000L);
            ts.set(ValueLayout.JAVA_LONG, 8, timeoutNanos % 1_000_000_000L);
            check("cuFileBatchIOGetStatus", (long) batchStatus.invokeExact(batch, minNr, nr, events, ts));
            return nr.get(ValueLayout.JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuFileBatchIOCancel: asks cuFile to drop the batch's ops still in flight (after a deadline passed). */
    public Status batchCancel(MemorySegment batch) {
        try {
            return Status.of((long) batchCancel.invokeExact(batch));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void batchDestroy(MemorySegment batch) {
        try {
            batchDestroy.invokeExact(batch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Fills entry {@code i} of an {@link #IO_PARAMS} array. */
    static void param(MemorySegment params, int i, boolean write, MemorySegment fh, long devBase, long fileOffset,
                      long devOffset, long size, long cookie) {
        long o = i * IO_PARAMS.byteSize();
        params.set(ValueLayout.JAVA_INT, o + P_MODE, BATCH_MODE);
        params.set(ValueLayout.ADDRESS, o + P_BASE, MemorySegment.ofAddress(devBase));
        params.set(ValueLayout.JAVA_LONG, o + P_FILE_OFF, fileOffset);
        params.set(ValueLayout.JAVA_LONG, o + P_DEV_OFF, devOffset);
        params.set(ValueLayout.JAVA_LONG, o + P_SIZE, size);
        params.set(ValueLayout.ADDRESS, o + P_FH, fh);
        params.set(ValueLayout.JAVA_INT, o + P_OPCODE, write ? OP_WRITE : OP_READ);
        params.set(ValueLayout.ADDRESS, o + P_COOKIE, MemorySegment.ofAddress(cookie));
    }

    static long eventCookie(MemorySegment events, int i) {
        return events.get(ValueLayout.ADDRESS, i * IO_EVENTS.byteSize() + E_COOKIE).address();
    }

    static int eventStatus(MemorySegment events, int i) {
        return events.get(ValueLayout.JAVA_INT, i * IO_EVENTS.byteSize() + E_STATUS);
    }

    static long eventRet(MemorySegment events, int i) {
        return events.get(ValueLayout.JAVA_LONG, i * IO_EVENTS.byteSize() + E_RET);
    }

    static RuntimeException rethrow(Throwable t) {
        return Libc.rethrow(t);
    }
}
