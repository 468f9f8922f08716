<?php
// The PHP SDK's compiled bounds against the one table every SDK is checked against
// (sdk/testdata/limits.json, DESIGN §5): a bound changed here and not there, or there and
// not here, fails this test. PHP flushes within its maintenance budget.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Limits;

final class LimitsTableTest extends TestCase
{
    public function testCompiledBoundsAreTheSharedTable(): void
    {
        $table = json_decode((string)file_get_contents(
            __DIR__ . '/../../testdata/limits.json'), true, 8, JSON_THROW_ON_ERROR);
        $l = new Limits();
        $got = [
            'sampling_interval_max_us' => $l->samplingIntervalMaxUs,
            'upload_interval_min_s' => $l->uploadIntervalMinS,
            'upload_interval_max_s' => $l->uploadIntervalMaxS,
            'stack_depth_min' => $l->stackDepthMin,
            'stack_depth_max' => $l->stackDepthMax,
            'poll_interval_min_s' => $l->pollIntervalMinS,
            'poll_interval_max_s' => $l->pollIntervalMaxS,
            'upload_max_bytes' => $l->uploadMaxBytes,
            'flush_timeout_s' => $l->maintenanceBudgetS,
        ];
        $this->assertEquals($table['shared'], $got);
        $this->assertSame($table['sampling_interval_min_us']['php'], $l->samplingIntervalMinUs);
    }
}
