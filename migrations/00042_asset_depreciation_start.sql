-- +goose Up

-- The day an asset was put into use and the first month of its
-- depreciation (asset.register's in_use_date and depreciation_start: by
-- default the month after it was put into use). NULL on the assets
-- registered before they were kept: those depreciate from their month of
-- acquisition, as they always did, so no posted schedule changes.
ALTER TABLE assets ADD COLUMN in_use_date date;
ALTER TABLE assets ADD COLUMN first_period date;
ALTER TABLE assets ADD CONSTRAINT assets_in_use_after_acquisition CHECK (in_use_date >= acquisition_date);
ALTER TABLE assets ADD CONSTRAINT assets_first_period_is_a_month
    CHECK (first_period = date_trunc('month', first_period)::date AND first_period >= date_trunc('month', in_use_date)::date);

-- +goose Down
ALTER TABLE assets DROP COLUMN first_period;
ALTER TABLE assets DROP COLUMN in_use_date;
