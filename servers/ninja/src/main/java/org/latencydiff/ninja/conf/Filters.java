package org.latencydiff.ninja.conf;

import java.util.List;
import ninja.Filter;
import ninja.application.ApplicationFilters;
import org.latencydiff.ninja.filters.ReferenceHeadersFilter;

/** Ninja's conf.Filters: filters applied to every route. */
public class Filters implements ApplicationFilters {

    @Override
    public void addFilters(List<Class<? extends Filter>> filters) {
        filters.add(ReferenceHeadersFilter.class);
    }
}
