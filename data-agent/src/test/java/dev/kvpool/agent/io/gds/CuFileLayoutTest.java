package dev.kvpool.agent.io.gds;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The cuFile binding without libcufile: struct sizes and offsets as cufile.h (cuFile 1.15) lays them out on
 * x86-64, the by-value CUfileError_t split from the register it comes back in, the ssize_t results, code names, and
 * a missing library or symbol turned into a reason.
 */
class CuFileLayoutTest {
    @Test
    void structLayoutsMatchCufileH() {
        assertEquals(8, CuFile.ERROR.byteSize());
        assertEquals(24, CuFile.DESCR.byteSize());
        assertEquals(0, CuFile.offset(CuFile.DESCR, "type"));
        assertEquals(8, CuFile.offset(CuFile.DESCR, "handle"));
        assertEquals(16, CuFile.offset(CuFile.DESCR, "fs_ops"));
        assertEquals(64, CuFile.IO_PARAMS.byteSize());
        assertEquals(0, CuFile.P_MODE);
        assertEquals(8, CuFile.P_BASE);
        assertEquals(16, CuFile.P_FILE_OFF);
        assertEquals(24, CuFile.P_DEV_OFF);
        assertEquals(32, CuFile.P_SIZE);
        assertEquals(40, CuFile.P_FH);
        assertEquals(48, CuFile.P_OPCODE);
        assertEquals(56, CuFile.P_COOKIE);
        assertEquals(24, CuFile.IO_EVENTS.byteSize());
        assertEquals(0, CuFile.E_COOKIE);
        assertEquals(8, CuFile.E_STATUS);
        assertEquals(16, CuFile.E_RET);
        assertEquals(16, CuFile.TIMESPEC.byteSize());
        assertEquals(56, CuFile.DRV_PROPS.byteSize());
        assertEquals(32, CuFile.offset(CuFile.DRV_PROPS, "fflags"));
        assertEquals(48, CuFile.offset(CuFile.DRV_PROPS, "max_batch_io_size"));
        assertEquals(52, CuFile.offset(CuFile.DRV_PROPS, "max_batch_io_timeout_msecs"));
    }

    @Test
    void batchParamsAreWrittenWhereCuFileReadsThem() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(CuFile.IO_PARAMS.byteSize() * 2, 8);
            CuFile.param(p, 1, true, MemorySegment.ofAddress(0xABC0), 0x7000_0000L, 3L << 20, 5L << 18, 262144, 7);
            long o = 64;
            assertEquals(CuFile.BATCH_MODE, p.get(ValueLayout.JAVA_INT, o));
            assertEquals(0x7000_0000L, p.get(ValueLayout.JAVA_LONG, o + 8));
            assertEquals(3L << 20, p.get(ValueLayout.JAVA_LONG, o + 16));
            assertEquals(5L << 18, p.get(ValueLayout.JAVA_LONG, o + 24));
            assertEquals(262144, p.get(ValueLayout.JAVA_LONG, o + 32));
            assertEquals(0xABC0, p.get(ValueLayout.JAVA_LONG, o + 40));
            assertEquals(CuFile.OP_WRITE, p.get(ValueLayout.JAVA_INT, o + 48));
            assertEquals(7, p.get(ValueLayout.JAVA_LONG, o + 56));
            assertEquals(0, p.get(ValueLayout.JAVA_LONG, 0), "entry 0 untouched");

            MemorySegment ev = a.allocate(CuFile.IO_EVENTS.byteSize() * 2, 8);
            ev.set(ValueLayout.JAVA_LONG, 24, 9);
            ev.set(ValueLayout.JAVA_INT, 32, CuFile.STATUS_COMPLETE);
            ev.set(ValueLayout.JAVA_LONG, 40, 262144);
            assertEquals(9, CuFile.eventCookie(ev, 1));
            assertEquals(CuFile.STATUS_COMPLETE, CuFile.eventStatus(ev, 1));
            assertEquals(262144, CuFile.eventRet(ev, 1));
        }
    }

    @Test
    void errorStructReturnedInOneRegisterIsSplitAsItsMemoryWouldBe() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(CuFile.ERROR);
            s.set(ValueLayout.JAVA_INT, 0, 5011); // CU_FILE_CUDA_DRIVER_ERROR
            s.set(ValueLayout.JAVA_INT, 4, 999);
            CuFile.Status st = CuFile.Status.of(s.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(5011, st.err());
            assertEquals(999, st.cuErr());
            assertFalse(st.ok());
            assertEquals("CU_FILE_CUDA_DRIVER_ERROR (CUresult 999)", st.toString());
            s.set(ValueLayout.JAVA_INT, 0, 0);
            s.set(ValueLayout.JAVA_INT, 4, 0);
            assertTrue(CuFile.Status.of(s.get(ValueLayout.JAVA_LONG, 0)).ok());
            // a negative cu_err must not leak into err
            s.set(ValueLayout.JAVA_INT, 0, 5027);
            s.set(ValueLayout.JAVA_INT, 4, -1);
            assertEquals(5027, CuFile.Status.of(s.get(ValueLayout.JAVA_LONG, 0)).err());
        }
    }

    @Test
    void resultsAndCodesInWords() {
        assertNull(CuFile.describeResult(262144, 0));
        assertEquals("errno 5", CuFile.describeResult(-1, 5));
        assertEquals("CU_FILE_HANDLE_NOT_REGISTERED", CuFile.describeResult(-5027, 0));
        assertEquals("CU_FILE_HANDLE_NOT_REGISTERED", CuFile.errorName(CuFile.HANDLE_NOT_REGISTERED));
        assertEquals("CU_FILE_SUCCESS", CuFile.errorName(0));
        assertEquals("CU_FILE_BATCH_FULL", CuFile.errorName(5037));
        assertEquals("CUfileOpError 6000", CuFile.errorName(6000));
        assertEquals("errno 110", GpuFileIo.describe(-GpuFileIo.ETIMEDOUT));
        assertEquals("CU_FILE_IO_NOT_SUPPORTED", GpuFileIo.describe(-5008));
        assertEquals("4096 bytes", GpuFileIo.describe(4096));
    }

    @Test
    void aMissingLibraryOrSymbolIsAReasonNotACrash() {
        CuFile.Unavailable missing = assertThrows(CuFile.Unavailable.class,
                () -> CuFile.load("/nonexistent/dir/libcufile.so.0"));
        assertTrue(missing.getMessage().contains("libcufile not loadable"), missing.getMessage());
        // a real library without cuFile's symbols: the loader finds it, the binding says what is missing
        CuFile.Unavailable noSymbols = assertThrows(CuFile.Unavailable.class, () -> CuFile.load("libc.so.6"));
        assertTrue(noSymbols.getMessage().contains("cuFileDriverOpen"), noSymbols.getMessage());
    }
}
