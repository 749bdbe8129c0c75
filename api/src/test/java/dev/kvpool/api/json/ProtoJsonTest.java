package dev.kvpool.api.json;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Int64Value;
import dev.kvpool.api.proto.admin.AddAccountRequest;
import dev.kvpool.api.proto.admin.AccountRole;
import dev.kvpool.api.proto.admin.CacheReclaimStrategy;
import dev.kvpool.api.proto.admin.GetMetricsResponse;
import dev.kvpool.api.proto.admin.MetaIndexerConfig;
import dev.kvpool.api.proto.admin.MetricValue;
import dev.kvpool.api.proto.admin.MetricsData;
import dev.kvpool.api.proto.admin.MetricsTag;
import dev.kvpool.api.proto.admin.QuotaConfig;
import dev.kvpool.api.proto.admin.ReclaimPolicy;
import dev.kvpool.api.proto.admin.TriggerStrategy;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.GetInstanceInfoResponse;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpec;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.api.proto.meta.StorageType;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The JSON mapping rules of spec §1.4, the §5.1 conformance items 2–14 and the appendix's worked shapes. */
class ProtoJsonTest {

    static CommonResponseHeader header(ErrorCode code, String message, String requestId) {
        return CommonResponseHeader.newBuilder()
                .setStatus(Status.newBuilder().setCode(code).setMessage(message))
                .setRequestId(requestId)
                .build();
    }

    static CacheLocation nfsLocation(String uri) {
        return CacheLocation.newBuilder().setType(StorageType.ST_NFS).setSpecSize(1)
                .addLocationSpecs(LocationSpec.newBuilder().setName("tp0").setUri(uri)).build();
    }

    static GetCacheLocationRequest.Builder parseGcl(String json) {
        return ProtoJson.merge(json, GetCacheLocationRequest.newBuilder());
    }

    static ProtoJsonException parseError(String json) {
        return assertThrows(ProtoJsonException.class, () -> parseGcl(json));
    }

    @Nested
    class Printing {

        @Test
        void item9_snakeCaseNamesOnly() {
            String json = ProtoJson.printToString(StartWriteCacheResponse.newBuilder()
                    .setWriteSessionId("s").addLocations(nfsLocation("u")).build());
            assertTrue(json.contains("\"write_session_id\":\"s\""));
            assertTrue(json.contains("\"location_specs\":["));
            assertTrue(json.contains("\"spec_size\":1"));
            assertFalse(json.contains("writeSessionId") || json.contains("locationSpecs") || json.contains("specSize"));
        }

        @Test
        void item10_enumsAsNames_unknownValuesAsNumbers() {
            assertEquals("{\"code\":\"OK\",\"message\":\"\"}",
                    ProtoJson.printToString(Status.newBuilder().setCode(ErrorCode.OK).build()));
            assertTrue(ProtoJson.printToString(nfsLocation("u")).startsWith("{\"type\":\"ST_NFS\","));
            // a value this build does not know (e.g. one from a newer peer) prints as its number
            assertEquals("{\"type\":42,\"spec_size\":0,\"location_specs\":[]}",
                    ProtoJson.printToString(CacheLocation.newBuilder().setTypeValue(42).build()));
        }

        @Test
        void item11_int64AsStrings_int32BoolDoubleAsNumbers() {
            assertEquals("{\"name\":\"tp0\",\"size\":\"1024\"}",
                    ProtoJson.printToString(LocationSpecInfo.newBuilder().setName("tp0").setSize(1024).build()));
            assertEquals("{\"storage_type\":\"ST_NFS\",\"capacity\":\"-9223372036854775808\"}",
                    ProtoJson.printToString(QuotaConfig.newBuilder().setStorageType(
                            dev.kvpool.api.proto.admin.StorageType.ST_NFS).setCapacity(Long.MIN_VALUE).build()));
            assertEquals("{\"used_size\":\"0\",\"used_percentage\":0.5}",
                    ProtoJson.printToString(TriggerStrategy.newBuilder().setUsedPercentage(0.5).build()));
            assertEquals("{\"header\":{\"status\":{\"code\":\"UNSPECIFIED\",\"message\":\"\"},\"request_id\":\"\"},"
                            + "\"timestamp\":\"1738723200999\",\"metrics\":[],\"extra_data\":\"\"}",
                    ProtoJson.printToString(GetMetricsResponse.newBuilder()
                            .setHeader(dev.kvpool.api.proto.admin.CommonResponseHeader.newBuilder()
                                    .setStatus(dev.kvpool.api.proto.admin.Status.getDefaultInstance()))
                            .setTimestamp(1738723200999L).build()));
        }

        @Test
        void item12_defaultsArePrinted_unsetMessagesAreNot() {
            // the pre-check error of GetCacheLocation, exactly as in the appendix
            assertEquals("{\"header\":{\"status\":{\"code\":\"INSTANCE_NOT_EXIST\",\"message\":\"get GetCacheLocation "
                            + "metrics collector failed\"},\"request_id\":\"\",\"tracer_result\":\"\"},\"locations\":[]}",
                    ProtoJson.printToString(GetCacheLocationResponse.newBuilder().setHeader(header(
                            ErrorCode.INSTANCE_NOT_EXIST, "get GetCacheLocation metrics collector failed", ""))
                            .build()));
            String register = ProtoJson.printToString(RegisterInstanceResponse.newBuilder()
                    .setHeader(header(ErrorCode.INVALID_ARGUMENT, "bad", "t_1")).build());
            assertTrue(register.contains("\"storage_configs\":\"\""), register);
            // unset message field: absent
            String info = ProtoJson.printToString(GetInstanceInfoResponse.newBuilder()
                    .setHeader(header(ErrorCode.INSTANCE_NOT_EXIST, "x", "t_1")).build());
            assertFalse(info.contains("instance_info"), info);
            assertTrue(info.endsWith(",\"instance_group\":\"\"}"), info);
            // the empty message prints its defaults, nothing else
            assertEquals("{}", ProtoJson.printToString(CommonResponse.getDefaultInstance()));
        }

        @Test
        void item13_oneofMemberAtZeroIsPrinted() {
            String json = ProtoJson.printToString(StartWriteCacheResponse.newBuilder()
                    .setBlockMask(BlockMask.newBuilder().setOffset(0)).build());
            assertTrue(json.contains("\"block_mask\":{\"offset\":0}"), json);
            // a present BlockMask with no member set prints as {}
            assertTrue(ProtoJson.printToString(StartWriteCacheResponse.newBuilder()
                    .setBlockMask(BlockMask.getDefaultInstance()).build()).contains("\"block_mask\":{}"));
            assertEquals("{\"int_value\":\"0\"}",
                    ProtoJson.printToString(MetricValue.newBuilder().setIntValue(0).build()));
        }

        @Test
        void item14_neverBothOffsetAndBoolMasks() {
            BlockMask mask = BlockMask.newBuilder().setOffset(3)
                    .setBoolMasks(BoolMasksType.newBuilder().addValues(true).addValues(false)).build();
            assertEquals("{\"bool_masks\":{\"values\":[true,false]}}", ProtoJson.printToString(mask));
        }

        @Test
        void wrapperTypesPrintAsTheirBareValue() {
            assertEquals("{\"max_key_count\":\"0\",\"mutex_shard_num\":\"0\",\"batch_key_size\":\"0\","
                            + "\"persist_metadata_interval_time_ms\":\"1000\"}",
                    ProtoJson.printToString(MetaIndexerConfig.newBuilder()
                            .setPersistMetadataIntervalTimeMs(Int64Value.of(1000)).build()));
            assertFalse(ProtoJson.printToString(MetaIndexerConfig.getDefaultInstance()).contains("persist"));
            assertEquals("\"7\"", ProtoJson.printToString(Int64Value.of(7)));
        }

        @Test
        void stringsAreEscapedOnlyWhereJsonRequires() {
            assertEquals("{\"name\":\"a<b>&='\\\"\\\\\\n\\u0001\\u2028é😀\",\"uri\":\"\"}",
                    ProtoJson.printToString(LocationSpec.newBuilder().setName("a<b>&='\"\\\n\u0001\u2028é😀").build()));
        }

        @Test
        void streamAndStringFormsMatchTheByteForm() {
            GetCacheLocationResponse m = GetCacheLocationResponse.newBuilder().addLocations(nfsLocation("u")).build();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ProtoJson.print(m, out);
            out.write('!'); // still open
            byte[] bytes = ProtoJson.print(m);
            assertEquals(new String(bytes, StandardCharsets.UTF_8) + "!", out.toString(StandardCharsets.UTF_8));
            assertEquals(new String(bytes, StandardCharsets.UTF_8), ProtoJson.printToString(m));
        }
    }

    @Nested
    class AppendixShapes {

        @Test
        void register() {
            String storageConfigs = "[{\"type\":\"file\",\"is_available\":true,\"global_unique_name\":\"nfs_01\","
                    + "\"storage_spec\":{\"root_path\":\"/tmp/nfs/\",\"key_count_per_file\":8}}]";
            RegisterInstanceResponse m = RegisterInstanceResponse.newBuilder()
                    .setHeader(header(ErrorCode.OK, "Instance registered successfully", "t_1738723200123456"))
                    .setStorageConfigs(storageConfigs).build();
            assertEquals("{\"header\":{\"status\":{\"code\":\"OK\",\"message\":\"Instance registered successfully\"},"
                    + "\"request_id\":\"t_1738723200123456\",\"tracer_result\":\"\"},"
                    + "\"storage_configs\":\"[{\\\"type\\\":\\\"file\\\",\\\"is_available\\\":true,"
                    + "\\\"global_unique_name\\\":\\\"nfs_01\\\",\\\"storage_spec\\\":{\\\"root_path\\\":\\\"/tmp/nfs/\\\","
                    + "\\\"key_count_per_file\\\":8}}]\",\"extra_info\":\"\"}", ProtoJson.printToString(m));
            // and the embedded JSON text survives a round trip unchanged
            assertEquals(storageConfigs, ProtoJson.merge(ProtoJson.print(m), RegisterInstanceResponse.newBuilder())
                    .getStorageConfigs());
        }

        @Test
        void startWriteCache() {
            StartWriteCacheRequest req = ProtoJson.merge(
                    "{\"trace_id\":\"t\",\"instance_id\":\"instance1\",\"block_keys\":[123],\"write_timeout_seconds\":30}",
                    StartWriteCacheRequest.newBuilder()).build();
            assertEquals(List.of(123L), req.getBlockKeysList());
            assertEquals(30, req.getWriteTimeoutSeconds());
            StartWriteCacheResponse resp = StartWriteCacheResponse.newBuilder()
                    .setHeader(header(ErrorCode.OK, "Write cache session started successfully", "t_1738723200200000"))
                    .setWriteSessionId("q7k2m0x9a1b3c5d7e9f0g2h4i6j8k0l1")
                    .setBlockMask(BlockMask.newBuilder().setOffset(0))
                    .addLocations(nfsLocation("file://nfs_01/tmp/nfs/instance1/tp0/7b?blkid=0&size=1024")).build();
            // '=' and '&' stay raw, as the appendix (KVCM's C++ printer) shows them
            assertEquals("{\"header\":{\"status\":{\"code\":\"OK\",\"message\":\"Write cache session started "
                    + "successfully\"},\"request_id\":\"t_1738723200200000\",\"tracer_result\":\"\"},"
                    + "\"write_session_id\":\"q7k2m0x9a1b3c5d7e9f0g2h4i6j8k0l1\",\"block_mask\":{\"offset\":0},"
                    + "\"locations\":[{\"type\":\"ST_NFS\",\"spec_size\":1,\"location_specs\":[{\"name\":\"tp0\","
                    + "\"uri\":\"file://nfs_01/tmp/nfs/instance1/tp0/7b?blkid=0&size=1024\"}]}]}",
                    ProtoJson.printToString(resp));
        }

        @Test
        void finishWriteCache() {
            FinishWriteCacheRequest req = ProtoJson.merge("{\"trace_id\":\"t\",\"instance_id\":\"instance1\","
                    + "\"write_session_id\":\"q7k2\",\"success_blocks\":{\"bool_masks\":{\"values\":[true]}}}",
                    FinishWriteCacheRequest.newBuilder()).build();
            assertEquals(List.of(true), req.getSuccessBlocks().getBoolMasks().getValuesList());
            assertEquals("{\"header\":{\"status\":{\"code\":\"OK\",\"message\":\"Write cache session finished "
                    + "successfully\"},\"request_id\":\"t_1\",\"tracer_result\":\"\"}}",
                    ProtoJson.printToString(CommonResponse.newBuilder()
                            .setHeader(header(ErrorCode.OK, "Write cache session finished successfully", "t_1"))
                            .build()));
        }

        @Test
        void getCacheLocation() {
            GetCacheLocationRequest req = parseGcl("{\"trace_id\":\"t\",\"instance_id\":\"instance1\","
                    + "\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[123],\"block_mask\":{\"offset\":0}}").build();
            assertEquals(QueryType.QT_PREFIX_MATCH, req.getQueryType());
            assertTrue(req.getBlockMask().hasOffset());
            assertEquals(0, req.getBlockMask().getOffset());
        }

        @Test
        void getInstanceInfo() {
            GetInstanceInfoResponse m = GetInstanceInfoResponse.newBuilder()
                    .setHeader(header(ErrorCode.OK, "", "r")).setInstanceGroup("default")
                    .setInstanceInfo(InstanceInfo.newBuilder().setQuotaGroupName("default_quota_group")
                            .setInstanceGroupName("default").setInstanceId("instance1").setBlockSize(128)
                            .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1024))
                            .setModelDeployment(ModelDeployment.newBuilder().setModelName("test_model")
                                    .setDtype("FP8").setTpSize(1).setDpSize(1).setPpSize(1)))
                    .build();
            assertEquals("{\"header\":{\"status\":{\"code\":\"OK\",\"message\":\"\"},\"request_id\":\"r\","
                    + "\"tracer_result\":\"\"},\"instance_group\":\"default\",\"instance_info\":{"
                    + "\"quota_group_name\":\"default_quota_group\",\"instance_group_name\":\"default\","
                    + "\"instance_id\":\"instance1\",\"block_size\":128,"
                    + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":\"1024\"}],"
                    + "\"model_deployment\":{\"model_name\":\"test_model\",\"dtype\":\"FP8\",\"use_mla\":false,"
                    + "\"tp_size\":1,\"dp_size\":1,\"lora_name\":\"\",\"pp_size\":1,\"extra\":\"\",\"user_data\":\"\","
                    + "\"use_eagle_pop\":false},"
                    + "\"location_spec_groups\":[],\"default_query_type\":\"QT_UNSPECIFIED\"}}",
                    ProtoJson.printToString(m));
        }

        @Test
        void getMetrics() {
            GetMetricsResponse m = GetMetricsResponse.newBuilder().setTimestamp(1738723200999L)
                    .addMetrics(MetricsData.newBuilder().setMetricName("service.query_counter")
                            .setMetricValue(MetricValue.newBuilder().setIntValue(3))
                            .addMetricTags(MetricsTag.newBuilder().setTagKey("api_name").setTagValue("AddStorage")))
                    .build();
            assertEquals("{\"timestamp\":\"1738723200999\",\"metrics\":[{\"metric_name\":\"service.query_counter\","
                    + "\"metric_value\":{\"int_value\":\"3\"},\"metric_tags\":[{\"tag_key\":\"api_name\","
                    + "\"tag_value\":\"AddStorage\"}]}],\"extra_data\":\"\"}", ProtoJson.printToString(m));
        }
    }

    @Nested
    class Parsing {

        @Test
        void aSliceOfALargerArrayParsesAsTheExactBytes() {
            byte[] json = "{\"instance_id\":\"i\",\"block_keys\":[\"1\",2,\"-3\"]}".getBytes(StandardCharsets.UTF_8);
            byte[] padded = new byte[json.length + 20];
            java.util.Arrays.fill(padded, (byte) '#'); // bytes outside the slice must not be read
            System.arraycopy(json, 0, padded, 7, json.length);
            GetCacheLocationRequest whole = ProtoJson.merge(json, GetCacheLocationRequest.newBuilder()).build();
            GetCacheLocationRequest slice = ProtoJson.merge(padded, 7, json.length, GetCacheLocationRequest.newBuilder()).build();
            assertEquals(whole, slice);
            assertEquals(java.util.List.of(1L, 2L, -3L), slice.getBlockKeysList());
        }

        @Test
        void item3_unknownTopLevelFieldIgnored() {
            assertEquals("i", parseGcl("{\"foo\":1,\"instance_id\":\"i\"}").getInstanceId());
        }

        @Test
        void unknownFieldsAreSkippedWhateverTheirValue() {
            GetCacheLocationRequest r = parseGcl("{\"foo\":{\"a\":[1,{\"b\":null,\"block_keys\":\"x\"}],\"c\":\"x\"},"
                    + "\"instance_id\":\"i\",\"bar\":[[],{},[[\"q\"]]],\"baz\":null,\"qux\":true,"
                    + "\"block_mask\":{\"nope\":{\"offset\":5},\"offset\":2}}").build();
            assertEquals("i", r.getInstanceId());
            assertEquals(2, r.getBlockMask().getOffset());
        }

        @Test
        void item4_unknownNestedFieldGivesEmptyBoolMask() {
            FinishWriteCacheRequest r = ProtoJson.merge("{\"instance_id\":\"i\",\"write_session_id\":\"w\","
                    + "\"success_blocks\":{\"bool_masks\":{\"offset\":0}}}", FinishWriteCacheRequest.newBuilder())
                    .build();
            assertTrue(r.getSuccessBlocks().hasBoolMasks());
            assertEquals(0, r.getSuccessBlocks().getBoolMasks().getValuesCount());
        }

        @Test
        void item5_lowerCamelNamesAreAccepted() {
            GetCacheLocationRequest camel = parseGcl("{\"traceId\":\"t\",\"instanceId\":\"i\",\"queryType\":2,"
                    + "\"blockKeys\":[1,2],\"tokenIds\":[3],\"blockMask\":{\"boolMasks\":{\"values\":[true]}},"
                    + "\"swSize\":4,\"locationSpecNames\":[\"tp0\"]}").build();
            GetCacheLocationRequest snake = parseGcl("{\"trace_id\":\"t\",\"instance_id\":\"i\",\"query_type\":2,"
                    + "\"block_keys\":[1,2],\"token_ids\":[3],\"block_mask\":{\"bool_masks\":{\"values\":[true]}},"
                    + "\"sw_size\":4,\"location_spec_names\":[\"tp0\"]}").build();
            assertEquals(snake, camel);
            assertEquals(List.of(1L, 2L), camel.getBlockKeysList());
        }

        @Test
        void item6_int64AsStringsEqualsNumbers() {
            assertEquals(parseGcl("{\"block_keys\":[123,-5]}").build(),
                    parseGcl("{\"block_keys\":[\"123\",\"-5\"]}").build());
            assertEquals(List.of(1000L, 5L), parseGcl("{\"block_keys\":[\"1e3\",5.0]}").getBlockKeysList());
        }

        @Test
        void item7_nineteenDigitKeysAreExact() {
            String json = "{\"block_keys\":[-8366447770138823354,9223372036854775807,-9223372036854775808,"
                    + "9007199254740993]}";
            GetCacheLocationRequest r = parseGcl(json).build();
            assertEquals(List.of(-8366447770138823354L, Long.MAX_VALUE, Long.MIN_VALUE, 9007199254740993L),
                    r.getBlockKeysList());
            assertTrue(ProtoJson.printToString(r).contains("\"block_keys\":[\"-8366447770138823354\","));
            assertEquals(r, parseGcl(ProtoJson.printToString(r)).build());
        }

        @Test
        void item8_enumAsIntegerEqualsName() {
            assertEquals(parseGcl("{\"query_type\":\"QT_PREFIX_MATCH\"}").build(),
                    parseGcl("{\"query_type\":2}").build());
            assertEquals(QueryType.QT_PREFIX_MATCH, parseGcl("{\"query_type\":\"2\"}").getQueryType());
            // the admin tests' integer enums
            assertEquals(ReclaimPolicy.POLICY_LRU, ProtoJson.merge("{\"reclaim_policy\":1}",
                    CacheReclaimStrategy.newBuilder()).getReclaimPolicy());
            assertEquals(dev.kvpool.api.proto.admin.StorageType.ST_NFS,
                    ProtoJson.merge("{\"storage_type\":4}", QuotaConfig.newBuilder()).getStorageType());
            assertEquals(AccountRole.ROLE_USER, ProtoJson.merge("{\"role\":0,\"user_name\":\"u\"}",
                    AddAccountRequest.newBuilder()).getRole());
        }

        @Test
        void unknownEnumNameIsAbsent_unknownNumberIsKept() {
            assertEquals(QueryType.QT_UNSPECIFIED, parseGcl("{\"query_type\":\"QT_NO_SUCH\"}").getQueryType());
            GetCacheLocationRequest.Builder b = GetCacheLocationRequest.newBuilder().setQueryType(QueryType.QT_BATCH_GET);
            assertEquals(QueryType.QT_BATCH_GET,
                    ProtoJson.merge("{\"query_type\":\"QT_NO_SUCH\"}", b).getQueryType(), "left as it was");
            assertEquals(77, parseGcl("{\"query_type\":77}").getQueryTypeValue());
            assertEquals("77", ProtoJson.printToString(parseGcl("{\"query_type\":77}"))
                    .replaceAll(".*\"query_type\":(\\d+).*", "$1"));
        }

        @Test
        void nullMeansAbsent() {
            GetCacheLocationRequest r = parseGcl("{\"trace_id\":null,\"block_keys\":null,\"block_mask\":null,"
                    + "\"query_type\":null,\"sw_size\":null}").build();
            assertEquals(GetCacheLocationRequest.getDefaultInstance(), r);
            assertFalse(r.hasBlockMask());
            assertFalse(ProtoJson.merge("{\"persist_metadata_interval_time_ms\":null}",
                    MetaIndexerConfig.newBuilder()).hasPersistMetadataIntervalTimeMs());
        }

        @Test
        void emptyRepeatedEqualsNotSet() {
            GetCacheLocationRequest r = parseGcl("{\"block_keys\":[],\"token_ids\":[7,8]}").build();
            assertEquals(0, r.getBlockKeysCount());
            assertEquals(List.of(7L, 8L), r.getTokenIdsList());
        }

        @Test
        void int32AcceptsNumbersAndStrings() {
            assertEquals(64, parseGcl("{\"sw_size\":\"64\"}").getSwSize());
            assertEquals(-3, parseGcl("{\"sw_size\":-3}").getSwSize());
        }

        @Test
        void wrapperAcceptsBareNumberOrString() {
            assertEquals(5, ProtoJson.merge("{\"persist_metadata_interval_time_ms\":5}",
                    MetaIndexerConfig.newBuilder()).getPersistMetadataIntervalTimeMs().getValue());
            MetaIndexerConfig zero = ProtoJson.merge("{\"persist_metadata_interval_time_ms\":\"0\"}",
                    MetaIndexerConfig.newBuilder()).build();
            assertTrue(zero.hasPersistMetadataIntervalTimeMs(), "an explicit 0 is present");
        }

        @Test
        void renamedDefaultQueryTypeAcceptsTheOldName() {
            assertEquals(QueryType.QT_BATCH_GET, ProtoJson.merge("{\"query_type\":\"QT_BATCH_GET\"}",
                    RegisterInstanceRequest.newBuilder()).getDefaultQueryType());
            assertEquals(QueryType.QT_PREFIX_MATCH, ProtoJson.merge("{\"defaultQueryType\":2}",
                    RegisterInstanceRequest.newBuilder()).getDefaultQueryType());
        }

        @Test
        void mergeKeepsWhatTheBuilderHad() {
            GetCacheLocationRequest.Builder b = GetCacheLocationRequest.newBuilder().setTraceId("keep").addBlockKeys(1);
            ProtoJson.merge("{\"instance_id\":\"i\",\"block_keys\":[2]}", b);
            assertEquals("keep", b.getTraceId());
            assertEquals("i", b.getInstanceId());
            assertEquals(List.of(1L, 2L), b.getBlockKeysList());
        }

        @Test
        void inputStreamFormMatchesByteForm() {
            byte[] json = "{\"instance_id\":\"i\",\"block_keys\":[1,2,3]}".getBytes(StandardCharsets.UTF_8);
            assertEquals(ProtoJson.merge(json, GetCacheLocationRequest.newBuilder()).build(),
                    ProtoJson.merge(new ByteArrayInputStream(json), GetCacheLocationRequest.newBuilder()).build());
        }

        @Test
        void nonAsciiAndEscapesRoundTrip() {
            LocationSpec m = ProtoJson.merge("{\"name\":\"\\u00e9\\ud83d\\ude00 中 \\u003c\",\"uri\":\"a\\nb\"}",
                    LocationSpec.newBuilder()).build();
            assertEquals("é😀 中 <", m.getName());
            assertEquals("a\nb", m.getUri());
        }
    }

    @Nested
    class Errors {

        @ParameterizedTest(name = "{0}")
        @CsvSource(delimiter = '|', textBlock = """
                {"block_keys":[1,2,3,"x"]}                             | block_keys[3]: expected an int64
                {"block_keys":[1,2,3,{}]}                              | block_keys[3]: expected an int64
                {"block_keys":[1,2,3,true]}                            | block_keys[3]: expected an int64
                {"block_keys":[1.5]}                                   | block_keys[0]: expected an int64
                {"block_keys":[9223372036854775808]}                   | block_keys[0]: expected an int64
                {"block_keys":["-9223372036854775809"]}                | block_keys[0]: expected an int64
                {"block_keys":5}                                       | block_keys: expected an array
                {"block_keys":{"a":1}}                                 | block_keys: expected an array
                {"trace_id":{}}                                        | trace_id: expected a string
                {"trace_id":["a"]}                                     | trace_id: expected a string
                {"trace_id":12}                                        | trace_id: expected a string
                {"sw_size":3000000000}                                 | sw_size: expected an int32
                {"sw_size":"abc"}                                      | sw_size: expected an int32
                {"sw_size":{}}                                         | sw_size: expected an int32
                {"block_mask":[]}                                      | block_mask: expected an object
                {"block_mask":"x"}                                     | block_mask: expected an object
                {"block_mask":{"offset":"x"}}                          | block_mask.offset: expected an int32
                {"block_mask":{"bool_masks":{"values":[true,1]}}}      | block_mask.bool_masks.values[1]: expected a bool
                {"block_mask":{"bool_masks":{"values":[true,null]}}}   | block_mask.bool_masks.values[1]: expected a bool
                {"query_type":{}}                                      | query_type: expected an enum name or number
                {"location_spec_names":["a",null]}                     | location_spec_names[1]: null is not allowed
                {"location_spec_names":["a",3]}                        | location_spec_names[1]: expected a string
                """)
        void wrongJsonTypeNamesTheFieldPath(String json, String messagePrefix) {
            ProtoJsonException e = parseError(json);
            assertTrue(e.getMessage().startsWith(messagePrefix), e.getMessage());
        }

        @ParameterizedTest(name = "[{index}] {0}")
        @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
                `{"instance_id":"i",`            | malformed JSON
                `{"instance_id" "i"}`            | malformed JSON
                `{"instance_id":'i'}`            | malformed JSON
                `{"block_keys":[1,2,}`           | malformed JSON
                `{"block_keys":[01]}`            | malformed JSON
                `{"block_keys":[NaN]}`           | malformed JSON
                `{} x`                           | malformed JSON
                `{}{}`                           | trailing data
                `{} []`                          | trailing data
                `[]`                             | expected a JSON object
                `"x"`                            | expected a JSON object
                `null`                           | expected a JSON object
                ``                               | expected a JSON object
                """)
        void item2_malformedJsonAndTrailingGarbageAreRejected(String json, String problem) {
            ProtoJsonException e = parseError(json == null ? "" : json);
            assertTrue(e.getMessage().contains(problem), e.getMessage());
        }

        @Test
        void malformedJsonInsideANestedFieldNamesThatField() {
            ProtoJsonException e = parseError("{\"block_mask\":{\"bool_masks\":{\"values\":[tru]}}}");
            assertTrue(e.getMessage().startsWith("block_mask.bool_masks.values[0]: malformed JSON"), e.getMessage());
            assertEquals("block_mask.bool_masks.values[0]", e.path());
        }

        @Test
        void isARuntimeException() {
            assertTrue(RuntimeException.class.isAssignableFrom(ProtoJsonException.class));
        }
    }

    @Test
    void isThreadSafe() throws Exception {
        GetCacheLocationResponse.Builder b = GetCacheLocationResponse.newBuilder();
        for (int i = 0; i < 64; i++) {
            b.addLocations(nfsLocation("file://nfs_01/k" + i));
        }
        GetCacheLocationResponse m = b.build();
        byte[] expected = ProtoJson.print(m);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Boolean>> results = new java.util.ArrayList<>();
            for (int t = 0; t < 8; t++) {
                results.add(pool.submit(() -> {
                    for (int i = 0; i < 300; i++) {
                        byte[] json = ProtoJson.print(m);
                        if (!java.util.Arrays.equals(expected, json)
                                || !m.equals(ProtoJson.merge(json, GetCacheLocationResponse.newBuilder()).build())) {
                            return false;
                        }
                    }
                    return true;
                }));
            }
            for (Future<Boolean> f : results) {
                assertTrue(f.get());
            }
        } finally {
            pool.shutdown();
        }
        assertArrayEquals(expected, ProtoJson.print(m));
    }
}
