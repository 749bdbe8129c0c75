package dev.kvpool.control.stats;

import jakarta.persistence.Entity;
import jakarta.persistence.IdClass;
import jakarta.persistence.Table;

/** A minute bucket (kept for {@code kvpool.control.stats.minute-retention}, then rolled up into {@link StatsHour}). */
@Entity
@Table(name = "stats_minute")
@IdClass(StatsKey.class)
public class StatsMinute extends StatsBucket {
}
